--- @include "priorityScore"
--- @include "signalWork"

-- Puts a ready job with a priority into prioritized, also while the queue is paused (workers
-- are woken only when it is not).
local function pushPrioritized(prioritizedKey, pcKey, markerKey, paused, jobId, priority)
  redis.call("ZADD", prioritizedKey, priorityScore(priority, pcKey), jobId)
  if not paused then
    signalWork(markerKey, 0)
  end
  return "prioritized"
end
