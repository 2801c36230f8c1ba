--- @include "enqueueReadyJob"
--- @include "emitEvent"

-- Moves every delayed job that is due by `now` (the caller's clock as it sent it, see pickup) to
-- where it can run: at most 1000 per call, so one call stays short however many are due.
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
