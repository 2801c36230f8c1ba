--- @include "enqueueReadyJob"
--- @include "emitEvent"

-- Moves every delayed job that is due to where it can run (at most 1000 per call, so one call
-- stays short however many are due). It reads the keys of moveToActive-11 and moveToFinished-14
-- by position (see pickup).
local function promoteDueJobs(prefix, now, paused)
  local due = redis.call("ZRANGEBYSCORE", KEYS[7], "-inf", now, "LIMIT", "0", "1000")
  for _, jobId in ipairs(due) do
    redis.call("ZREM", KEYS[7], jobId)
    local state = enqueueReadyJob(prefix, jobId, paused)
    emitEvent(KEYS[4], KEYS[9], state == "paused" and "paused" or "waiting", jobId,
      "prev", "delayed")
  end
end
