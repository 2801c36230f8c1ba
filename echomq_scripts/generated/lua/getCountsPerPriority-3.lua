--- Counts the jobs waiting at each priority asked.
--- Priority 0 counts the jobs without one (wait, or paused while the queue is paused), any other
--- the prioritized jobs of that priority.
--- @key wait         `emq:{q}:wait`         the wait list
--- @key paused       `emq:{q}:paused`       the paused list
--- @key prioritized  `emq:{q}:prioritized`  the prioritized set
--- @arg... priority  int(0..2097151)  the priorities to count
--- @return list[int]  a count for each priority asked, in the order asked
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

local waitKey, pausedKey, prioritizedKey = KEYS[1], KEYS[2], KEYS[3]
for i = 1, #ARGV do
  intArg(ARGV[i], "priority", 0, 2097151)
end

-- A prioritized job's score is priority * 2^32 plus a counter below 2^32: one priority's jobs
-- are the scores from priority * 2^32 up to the next priority's first.
local counts = {}
for i = 1, #ARGV do
  local priority = tonumber(ARGV[i])
  if priority == 0 then
    counts[i] = redis.call("LLEN", waitKey) + redis.call("LLEN", pausedKey)
  else
    counts[i] = redis.call("ZCOUNT", prioritizedKey, string.format("%d", priority * 4294967296),
      "(" .. string.format("%d", (priority + 1) * 4294967296))
  end
end
return counts
