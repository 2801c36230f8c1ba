--- Ends the rate limiter's current window: pickups may take jobs again at once.
--- The count starts again from 0 at the next pickup with a rate limit.
--- @key limiter  `emq:{q}:limiter`  the rate limiter's count, with the window's TTL
--- @return int  1 when a window was running, 0 when none was
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait", "emq:{q}:7:lock"),
-- or nil when the key is not one of a queue's: job keys are built from it, so they carry the
-- queue's hash tag and land on its Cluster slot. The scripts that delete by the keys a runtime
-- passes check each against it.
local function queuePrefix(key)
  return string.match(key, "^(emq:{[^{}]*}:)")
end

-- A key the caller passed, which must be the queue-wide key `name` of one queue
-- ("emq:{q}:<name>"): a script that writes or deletes by it must not reach another key. Returns
-- the queue's prefix; raises a Lua error naming the key otherwise.
local function checkQueueKey(key, name)
  local prefix = queuePrefix(key)
  if not prefix or key ~= prefix .. name then
    error("key " .. key .. " is not a queue's " .. name .. " key")
  end
  return prefix
end

local limiterKey = KEYS[1]
checkQueueKey(limiterKey, "limiter")
return redis.call("DEL", limiterKey)
