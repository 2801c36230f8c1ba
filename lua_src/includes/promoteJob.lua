--- @include "emitEvent"
--- @include "enqueueReadyJob"

-- Promotes a delayed job by hand (promote-8, and moveJobsToWait-8 for each one it takes): out
-- of the delayed set, to where pickup puts a due delayed job (includes/enqueueReadyJob.lua), its
-- hash's delay 0 as BullMQ's promote sets it (it waited no delay from now), with the event pickup
-- appends for it. Returns false when the delayed set does not hold the job, else true.
local function promoteJob(delayedKey, waitKey, pausedKey, prioritizedKey, pcKey, markerKey,
    eventsKey, metaKey, prefix, jobId, paused)
  if redis.call("ZREM", delayedKey, jobId) == 0 then
    return false
  end
  local state = enqueueReadyJob(waitKey, pausedKey, prioritizedKey, pcKey, markerKey, prefix, jobId,
    paused)
  redis.call("HSET", prefix .. jobId, "delay", "0")
  emitEvent(eventsKey, metaKey, state == "paused" and "paused" or "waiting", jobId,
    "prev", "delayed")
  return true
end
