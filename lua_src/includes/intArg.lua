-- The argument checkers, intArg and the other *Arg includes, return the value or raise a Lua
-- error that names the argument: scripts read their arguments before they write anything, so a
-- caller's mistake never leaves a job half-moved. Every bound is also in the script's header, so
-- the generated wrappers refuse the same values before sending them.

-- Integers stop at 2^53 - 1, the largest a Lua number holds exactly.
local MAX_INTEGER = 9007199254740991

-- An integer argument from `low` to `high` (nil: 2^53 - 1).
local function intArg(value, name, low, high)
  local number = tonumber(value)
  high = high or MAX_INTEGER
  if not number or number % 1 ~= 0 or number < low or number > high then
    local upTo = high == MAX_INTEGER and "2^53 - 1" or tostring(high)
    error(name .. " must be an integer from " .. low .. " to " .. upTo .. ", got '"
      .. tostring(value) .. "'")
  end
  return number
end
