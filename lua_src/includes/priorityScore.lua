-- Priorities are scored priority * 2^32 + a queue-wide counter, so jobs of one priority leave
-- in the order they arrived. 2^53 bounds the score: priorities go up to 2^21 - 1.
local function priorityScore(priority, pcKey)
  return priority * 4294967296 + redis.call("INCR", pcKey) % 4294967296
end
