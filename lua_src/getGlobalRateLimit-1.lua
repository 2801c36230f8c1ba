--- Reads the queue's rate limit. It only reads.
--- @key meta  `emq:{q}:meta`  the queue's meta hash
--- @return tuple[int, int]  the max and the window setGlobalRateLimit-1 stored, or 0 and 0

local stored = redis.call("HMGET", KEYS[1], "max", "duration")
local max = tonumber(stored[1]) or 0
if max == 0 then
  return { 0, 0 }
end
return { max, tonumber(stored[2]) or 0 }
