-- A SCAN cursor: decimal digits, as Redis reads it. A cursor may pass 2^53, which a Lua number
-- does not hold exactly, so it stays the text it came as. Returns it.
local function cursorArg(value)
  if not string.find(value, "^%d+$") then
    error("cursor must be decimal digits, got '" .. value .. "'")
  end
  return value
end
