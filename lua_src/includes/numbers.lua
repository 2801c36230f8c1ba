-- A numeric argument, or a Lua error naming it: scripts read their numbers before they write
-- anything, so a caller's mistake never leaves a job half-moved.
local function numberArg(value, name)
  local number = tonumber(value)
  if not number then
    error(name .. " must be a number, got '" .. tostring(value) .. "'")
  end
  return number
end
