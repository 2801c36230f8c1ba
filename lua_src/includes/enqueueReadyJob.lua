--- @include "pushPrioritized"
--- @include "pushReady"

-- Puts a job that became ready where workers take it, by the priority its hash holds. It reads
-- the keys of moveToActive-11 and moveToFinished-14 by position (see pickup).
local function enqueueReadyJob(prefix, jobId, paused)
  local priority = tonumber(redis.call("HGET", prefix .. jobId, "priority")) or 0
  if priority > 0 then
    return pushPrioritized(KEYS[3], KEYS[10], KEYS[11], paused, jobId, priority)
  end
  return pushReady(KEYS[1], KEYS[8], KEYS[11], paused, jobId)
end
