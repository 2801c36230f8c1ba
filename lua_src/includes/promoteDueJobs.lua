--- @include "enqueueReadyJob"
--- @include "emitEvent"

-- Moves every delayed job that is due by `now` (the caller's clock as it sent it, see pickup) to
-- where it can run: at most 1000 per call, so one call stays short however many are due.
-- Not through includes/promoteJob.lua, the promotion by hand: a due job keeps its last delay,
-- and each included function costs every pickup a closure (docs/benchmarks.md).
local function promoteDueJobs(delayedKey, waitKey, pausedKey, prioritizedKey, pcKey, markerKey,
    eventsKey, metaKey, prefix, now, paused)
  local due = redis.call("ZRANGEBYSCORE", delayedKey, "-inf", now, "LIMIT", "0", "1000")
  for _, jobId in ipairs(due) do
    redis.call("ZREM", delayedKey, jobId)
    local state = enqueueReadyJob(waitKey, pausedKey, prioritizedKey, pcKey, markerKey, prefix,
      jobId, paused)
    emitEvent(eventsKey, metaKey, state == "paused" and "paused" or "waiting", jobId,
      "prev", "delayed")
  end
end
