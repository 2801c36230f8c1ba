--- Completes or fails an active job, and optionally picks the next one up in the same call.
--- Verifies the lock token first, then that the job exists, has no pending and no failed children
--- (to complete) and is active. A completion stores the return value; a failure stores the reason
--- and stack trace and, while attempts are left, goes back to wait (no backoff) or to delayed
--- (a backoff) instead of to failed. A finished job is scored by its finish time, counted in the
--- metrics, kept or removed by removeOnComplete / removeOnFail, and releases its deduplication id. A completed child's value
--- goes to its parent, and the last pending one moves the parent out of waiting-children; a child
--- that fails for good acts on its parent by its policy (failParentOnFailure,
--- ignoreDependencyOnFailure, removeDependencyOnFailure, continueParentOnFailure; none: the parent
--- keeps waiting and cannot complete). Re-sent after it landed, the call answers where the job went
--- and, with fetch_next, the job the first call picked (the one the token holds), if any.
--- @key wait              `emq:{q}:wait`              the wait list
--- @key active            `emq:{q}:active`            the active list
--- @key prioritized       `emq:{q}:prioritized`       the prioritized set
--- @key events            `emq:{q}:events`            the event stream
--- @key stalled           `emq:{q}:stalled`           the stalled set
--- @key limiter           `emq:{q}:limiter`           the rate limiter's counter
--- @key delayed           `emq:{q}:delayed`           the delayed set, scored by run-at
--- @key paused            `emq:{q}:paused`            the paused list
--- @key meta              `emq:{q}:meta`              the queue's meta hash
--- @key pc                `emq:{q}:pc`                the counter that orders jobs of one priority
--- @key marker            `emq:{q}:marker`            the marker idle workers block on
--- @key finished          `emq:{q}:<outcome>`         the completed or the failed set
--- @key metrics           `emq:{q}:metrics:<outcome>` the metrics of completed or of failed jobs
--- @key waiting_children  `emq:{q}:waiting-children`  the waiting-children set
--- @arg job_id          id                      the job's id
--- @arg token           string(non-empty)       the worker's lock token
--- @arg now             int(0..) = @now         the caller's clock, in milliseconds
--- @arg outcome         enum(completed|failed)  how the job ended
--- @arg result          string                  the return value (JSON) or the failure reason
--- @arg stacktrace      string = ""             the failure's stack trace, or ""
--- @arg jitter          number(0..<1) = 0       the random draw for a backoff with a jitter
--- @arg fetch_next      bool = false            pick the next job up for the same token
--- @arg lock_duration   int(1..) = 30000        the next job's lock time to live, in milliseconds
--- @arg limit_max       int(0..) = 0            as moveToActive-11's
--- @arg limit_duration  int(0..) = 0            as moveToActive-11's
--- @arg concurrency     int(0..) = 0            as moveToActive-11's
--- @arg max_metrics     int(0..) = 0            keep this many per-minute points of the metrics
---     series (0: only the count)
--- @arg backoff_delay   int(0..) = 0            the retry delay the caller computed, for a backoff
---     of a type other than fixed and exponential
--- @return Finished(moved_to: string, job_id: string, fields: hash, limit_delay: int)  where
---     the job went ("completed", "failed", "delayed" or, retried without a delay, "waiting"),
---     then the next job as moveToActive answers it, for the same token
--- @error -1 JobNotExist
--- @error -2 JobLockNotExist
--- @error -3 JobNotInState
--- @error -4 JobPendingChildren
--- @error -6 JobLockMismatch
--- @error -9 JobHasFailedChildren
--- @include "includes/applyRetention"
--- @include "includes/backoffDelay"
--- @include "includes/checkLock"
--- @include "includes/childFailed"
--- @include "includes/countFinished"
--- @include "includes/digitsArg"
--- @include "includes/emitEvent"
--- @include "includes/enqueueReadyJob"
--- @include "includes/enumArg"
--- @include "includes/finishDedupId"
--- @include "includes/fractionArg"
--- @include "includes/heldJob"
--- @include "includes/intArg"
--- @include "includes/jobOptions"
--- @include "includes/landedFinish"
--- @include "includes/nowArg"
--- @include "includes/pickup"
--- @include "includes/queuePrefix"
--- @include "includes/recordFinish"
--- @include "includes/releaseParent"
--- @include "includes/signalWork"
--- @include "includes/tokenArg"

local waitKey, activeKey, prioritizedKey, eventsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local stalledKey, limiterKey, delayedKey, pausedKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local metaKey, pcKey, markerKey = KEYS[9], KEYS[10], KEYS[11]
local finishedKey, metricsKey, waitingChildrenKey = KEYS[12], KEYS[13], KEYS[14]
local outcome = enumArg(ARGV[4], "outcome", "completed", "failed")
-- `now` is a number for sums; Redis gets the caller's text (nowText), which spares a conversion.
local jobId, token, nowText = ARGV[1], tokenArg(ARGV[2]), ARGV[3]
local now = nowArg(nowText)
local result, stacktrace = ARGV[5], ARGV[6]
local jitter = fractionArg(ARGV[7], "jitter")
local fetchNext = ARGV[8] == "1"
local lockDuration = ARGV[9] -- as the caller sent it, like nowText
digitsArg(lockDuration, "lock_duration", 1)
-- "0", the usual value, is read without a call (see moveToActive-11).
local limitMax = ARGV[10] == "0" and 0 or intArg(ARGV[10], "limit_max", 0)
local limitDuration = ARGV[11] == "0" and 0 or intArg(ARGV[11], "limit_duration", 0)
local concurrency = ARGV[12] == "0" and 0 or intArg(ARGV[12], "concurrency", 0)
local maxMetrics = ARGV[13] == "0" and 0 or intArg(ARGV[13], "max_metrics", 0)
local customDelay = ARGV[14] == "0" and 0 or intArg(ARGV[14], "backoff_delay", 0)

local prefix = queuePrefix(waitKey)
local jobKey = prefix .. jobId

local lockState = checkLock(jobKey .. ":lock", token)
if lockState ~= 0 then
  -- No lock for this token: a new call fails, a re-sent one answers what the first call did.
  local went = landedFinish(prefix, jobId, token)
  if went ~= "completed" and went ~= "failed" and went ~= "delayed" and went ~= "waiting" then
    return lockState
  end
  -- The first call's pickup, if it took a job: the token holds it. No new pickup: it could take
  -- back the job the first call retried, and the first call's reply had none.
  local held = fetchNext and heldJob(prefix, token)
  if held then
    return { went, held, redis.call("HGETALL", prefix .. held), 0 }
  end
  return { went, "", {}, 0 }
end
-- Read before anything is written: a failure past this point would leave the job nowhere. Every
-- job hash has "atm", so none means no job; "deps" marks a job that ever had a child.
local stored = redis.call("HMGET", jobKey, "opts", "parentKey", "deid", "atm", "deps")
if not stored[4] then
  return -1
end
if outcome == "completed" and stored[5] then
  if redis.call("SCARD", jobKey .. ":dependencies") > 0 then
    return -4
  end
  if redis.call("EXISTS", jobKey .. ":unsuccessful") == 1 then
    return -9
  end
end
local opts = jobOptions(stored[1])
local parentKey, dedupId = stored[2], stored[3]
local attemptsMade = (tonumber(stored[4]) or 0) + 1
-- "%d": redis.call would print the number as a float, which costs the server more.
local attemptsText = string.format("%d", attemptsMade)
if redis.call("LREM", activeKey, "-1", jobId) == 0 then
  return -3
end
redis.call("DEL", jobKey .. ":lock")
redis.call("SREM", stalledKey, jobId)

local went = outcome
local retryAt = nil
if outcome == "failed" and attemptsMade < (tonumber(opts.attempts) or 1) then
  local delay = backoffDelay(opts.backoff, attemptsMade, jitter, customDelay)
  redis.call("HSET", jobKey, "atm", attemptsText, "failedReason", result, "stacktrace", stacktrace,
    "delay", delay)
  -- Without a delay the job is ready again at once (as BullMQ's retry does), not delayed.
  if delay > 0 then
    went, retryAt = "delayed", now + delay
  else
    went = "waiting"
  end
else
  if outcome == "completed" then
    redis.call("HSET", jobKey, "atm", attemptsText, "returnvalue", result, "finishedOn", nowText)
  else
    redis.call("HSET", jobKey, "atm", attemptsText, "failedReason", result, "stacktrace",
      stacktrace, "finishedOn", nowText)
  end
  redis.call("ZADD", finishedKey, nowText, jobId)
  countFinished(metricsKey, maxMetrics, now)
  emitEvent(eventsKey, metaKey, outcome, jobId, "prev", "active")
  finishDedupId(prefix, jobId, dedupId, nowText)
  local rule = opts.removeOnFail
  if outcome == "completed" then
    rule = opts.removeOnComplete
  end
  applyRetention(finishedKey, prefix, jobId, rule, now)
  -- Then the parent, so that its events follow the child's. A completed child's value goes to
  -- the parent's :processed and the last one releases it; a failed one's policy decides
  -- (childFailed). A parent that retention removed has no :dependencies any more: SREM finds
  -- nothing to do, and nothing is written to it.
  if parentKey then
    if outcome == "failed" then
      childFailed(waitingChildrenKey, jobId, parentKey, opts, result, nowText)
    elseif redis.call("SREM", parentKey .. ":dependencies", jobKey) == 1 then
      redis.call("HSET", parentKey .. ":processed", jobKey, result)
      releaseParent(waitingChildrenKey, string.sub(parentKey, #prefix + 1), true)
    end
  end
end
local nextJob = { "", {}, 0 }
if fetchNext then
  nextJob = pickup(waitKey, activeKey, prioritizedKey, eventsKey, limiterKey, delayedKey,
    pausedKey, metaKey, pcKey, markerKey, prefix, token, lockDuration, nowText, limitMax,
    limitDuration, concurrency,
    redis.call("HGETALL", metaKey), jobId, went)
end
if nextJob[1] == "" then
  -- The token's record keeps this finish's answer for a re-send: the job may be removed, or
  -- finished again by another token, before the client sends it.
  recordFinish(prefix, token, jobId, went)
end
if retryAt then
  -- After the pickup, so the token never takes back the job it just retried: a finish of it
  -- re-sent could not be told from a new one.
  redis.call("ZADD", delayedKey, retryAt, jobId)
  signalWork(markerKey, retryAt)
  emitEvent(eventsKey, metaKey, "delayed", jobId, "delay", retryAt - now, "prev", "active")
elseif went == "waiting" then
  local state = enqueueReadyJob(waitKey, pausedKey, prioritizedKey, pcKey, markerKey, prefix,
    jobId, redis.call("HEXISTS", metaKey, "paused") == 1)
  emitEvent(eventsKey, metaKey, state == "paused" and "paused" or "waiting", jobId, "prev",
    "active")
end
return { went, nextJob[1], nextJob[2], nextJob[3] }
