--- Recovers stalled jobs: active jobs whose worker stopped renewing the lock.
--- A job is stalled when it was active at the previous run of this script (which marks every
--- active job in the stalled set), no heartbeat cleared its mark since, and its lock is gone.
--- Below the maximum stalled count it goes back to wait (paused while the queue is paused), to the
--- front of the line, with its count incremented; past it, it fails like any failed job (metrics,
--- removeOnFail, its deduplication id released, its parent told by its policy as
--- moveToFinished-14 tells it). Every run is one atomic step, so several
--- workers may run it.
--- @key stalled  `emq:{q}:stalled`  the stalled set: the marks of the previous run
--- @key wait     `emq:{q}:wait`     the wait list
--- @key active   `emq:{q}:active`   the active list
--- @key failed   `emq:{q}:failed`   the failed set
--- @key paused   `emq:{q}:paused`   the paused list
--- @key meta     `emq:{q}:meta`     the queue's meta hash
--- @key events   `emq:{q}:events`   the event stream
--- @key marker   `emq:{q}:marker`   the marker idle workers block on
--- @arg max_stalled  int(0..)  how often a job may stall before it fails
--- @arg now          int(0..) = @now  the caller's clock, in milliseconds
--- @return StalledCheck(moved: list[string], failed: list[string])
---     the ids moved back to wait, and the ids failed
--- @include "includes/applyRetention"
--- @include "includes/childFailed"
--- @include "includes/countFinished"
--- @include "includes/emitEvent"
--- @include "includes/finishDedupId"
--- @include "includes/intArg"
--- @include "includes/jobOptions"
--- @include "includes/nowArg"
--- @include "includes/queuePrefix"
--- @include "includes/signalWork"

local stalledKey, waitKey, activeKey, failedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local pausedKey, metaKey, eventsKey, markerKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
-- `now` is a number for sums; Redis gets the caller's text (nowText), which spares a conversion.
local nowText = ARGV[2]
local maxStalled, now = intArg(ARGV[1], "max_stalled", 0), nowArg(nowText)

local prefix = queuePrefix(stalledKey)
local paused = redis.call("HEXISTS", metaKey, "paused") == 1
local recovered, failed = {}, {}
for _, jobId in ipairs(redis.call("SMEMBERS", stalledKey)) do
  local jobKey = prefix .. jobId
  if redis.call("EXISTS", jobKey .. ":lock") == 0 and redis.call("LREM", activeKey, "-1", jobId) == 1 then
    local stalledCount = redis.call("HINCRBY", jobKey, "stc", "1")
    if stalledCount > maxStalled then
      local reason = "job stalled more than allowable limit"
      local stored = redis.call("HMGET", jobKey, "opts", "parentKey", "deid")
      local opts = jobOptions(stored[1])
      redis.call("HSET", jobKey, "failedReason", reason, "finishedOn", nowText)
      redis.call("ZADD", failedKey, nowText, jobId)
      countFinished(prefix .. "metrics:failed", 0, now)
      emitEvent(eventsKey, metaKey, "failed", jobId, "prev", "active", "reason", "stalled")
      finishDedupId(prefix, jobId, stored[3], nowText)
      failed[#failed + 1] = jobId
      applyRetention(failedKey, prefix, jobId, opts.removeOnFail, now)
      -- Its parent as a failure by moveToFinished-14 would: by the job's policy.
      if stored[2] then
        childFailed(prefix .. "waiting-children", jobId, stored[2], opts, reason, nowText)
      end
    else
      redis.call("RPUSH", paused and pausedKey or waitKey, jobId)
      emitEvent(eventsKey, metaKey, "stalled", jobId)
      recovered[#recovered + 1] = jobId
    end
  end
end
-- Mark every job active now; a heartbeat (extendLock) or a finish clears the mark.
redis.call("DEL", stalledKey)
local active = redis.call("LRANGE", activeKey, "0", "-1")
if #active > 0 then
  redis.call("SADD", stalledKey, unpack(active))
end
if #recovered > 0 and not paused then
  signalWork(markerKey, 0)
end
return { recovered, failed }
