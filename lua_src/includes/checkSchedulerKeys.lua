--- @include "checkJobId"

-- Refuses a scheduler id that breaks the id rule, and keys that are not its: `schedulersKey` must
-- be a queue's `emq:{q}:repeat` and `schedulerKey` `emq:{q}:repeat:<schedulerId>`. A runtime
-- that builds the keys itself must build them for this id; the scripts write and delete by them.
local function checkSchedulerKeys(schedulersKey, schedulerKey, schedulerId)
  if schedulerId == "" then
    error("scheduler id must not be empty")
  end
  checkJobId(schedulerId, "scheduler id")
  -- One find of the whole key, not queuePrefix's capture and a concatenation: an upsert pays
  -- this on every call, and the capture cost it 2.5k instructions more (make bench).
  if not string.find(schedulersKey, "^emq:{[^{}]*}:repeat$")
      or schedulerKey ~= schedulersKey .. ":" .. schedulerId then
    error("keys " .. schedulersKey .. " and " .. schedulerKey .. " are not the keys of scheduler '"
      .. schedulerId .. "'")
  end
end
