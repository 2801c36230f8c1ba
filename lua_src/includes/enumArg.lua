-- An argument that must be one of the words given after `name`, as its header's enum(...) lists
-- them: enumArg(ARGV[1], "action", "pause", "resume"). Returns the value. The words are compared
-- one by one, without building a table of them: a call that passes costs a comparison or two.
local function enumArg(value, name, ...)
  local count = select("#", ...)
  for i = 1, count do
    if value == select(i, ...) then
      return value
    end
  end
  local words = "'" .. select(1, ...) .. "'"
  for i = 2, count do
    words = words .. (i == count and " or '" or ", '") .. select(i, ...) .. "'"
  end
  error(name .. " must be " .. words .. ", got '" .. tostring(value) .. "'")
end
