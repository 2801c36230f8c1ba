--- @include "emitEvent"
--- @include "removeJobKeys"

-- Removes a job scheduler's pending iteration `jobId` from `stateKey` (the state `state` that
-- pendingIteration found), with its keys, and appends `removed`. An iteration has no parent: it
-- joins no flow (addFlow-10 answers -8).
local function removePendingIteration(prefix, jobId, stateKey, state, eventsKey, metaKey)
  if state == "wait" or state == "paused" then
    redis.call("LREM", stateKey, 0, jobId)
  else
    redis.call("ZREM", stateKey, jobId)
  end
  removeJobKeys(prefix, jobId)
  emitEvent(eventsKey, metaKey, "removed", jobId, "prev", state)
end
