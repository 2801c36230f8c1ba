-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait"): job keys are built
-- from it, so they carry the queue's hash tag and land on its Cluster slot.
local function queuePrefix(key)
  return string.match(key, "^(.*:)[^:]*$")
end
