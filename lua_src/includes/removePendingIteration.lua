--- @include "emitEvent"
--- @include "leaveParent"
--- @include "removeJobKeys"

-- Removes a job scheduler's pending iteration `jobId` from `stateKey` (the state `state` that
-- pendingIteration found), with its keys, from its parent's records (a flow may have named its id
-- as a child), and appends `removed`.
local function removePendingIteration(prefix, jobId, stateKey, state, eventsKey, metaKey)
  if state == "wait" or state == "paused" then
    redis.call("LREM", stateKey, 0, jobId)
  else
    redis.call("ZREM", stateKey, jobId)
  end
  leaveParent(prefix, prefix .. jobId, redis.call("HGET", prefix .. jobId, "parentKey") or nil)
  removeJobKeys(prefix, jobId)
  emitEvent(eventsKey, metaKey, "removed", jobId, "prev", state)
end
