--- @include "signalWork"

-- Puts a ready job first among the jobs of its priority: the score priority * 2^32 with no
-- counter, below every score of that priority that has one (jobs that share it go in id order).
-- Also while the queue is paused; workers are woken only when it is not.
local function pushPrioritizedFirst(prioritizedKey, markerKey, paused, jobId, priority)
  redis.call("ZADD", prioritizedKey, string.format("%d", priority * 4294967296), jobId)
  if not paused then
    signalWork(markerKey, 0)
  end
  return "prioritized"
end
