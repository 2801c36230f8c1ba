--- @include "queuePrefix"

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
