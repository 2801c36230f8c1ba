--- Counts the jobs waiting at each priority asked.
--- Priority 0 counts the jobs without one (wait, or paused while the queue is paused), any other
--- the prioritized jobs of that priority.
--- @key wait         `emq:{q}:wait`         the wait list
--- @key paused       `emq:{q}:paused`       the paused list
--- @key prioritized  `emq:{q}:prioritized`  the prioritized set
--- @arg... priority  int(0..2097151)  the priorities to count
--- @return list[int]  a count for each priority asked, in the order asked
--- @include "includes/intArg"

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
