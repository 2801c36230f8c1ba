-- Numeric arguments, or a Lua error naming the argument: scripts read their arguments before they
-- write anything, so a caller's mistake never leaves a job half-moved. Integers stop at 2^53 - 1,
-- the largest a Lua number holds exactly; every bound here is also in the script's header, so the
-- generated wrappers refuse the same values before sending them.
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

-- The caller's clock: an integer of 0 or more in decimal digits, as the scripts hand it to Redis
-- as it came (ZADD, ZRANGEBYSCORE, HSET): Redis would refuse the text " 5" that tonumber reads,
-- after the script's first write.
local function nowArg(value)
  if not string.find(value, "^%d+$") then
    error("now must be an integer from 0 to 2^53 - 1 in decimal digits, got '" .. value .. "'")
  end
  return intArg(value, "now", 0)
end

-- A fraction argument: a number from 0 up to, not including, 1.
local function fractionArg(value, name)
  local number = tonumber(value)
  if not number or not (number >= 0 and number < 1) then
    error(name .. " must be a number from 0 up to 1 (not 1 itself), got '" .. tostring(value) .. "'")
  end
  return number
end

-- A worker's lock token: any text but the empty one, which would name no pickup.
local function tokenArg(value)
  if value == "" then
    error("token must not be empty")
  end
  return value
end
