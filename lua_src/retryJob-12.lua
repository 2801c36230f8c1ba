--- Retries an active job now, without a backoff: the worker that holds its lock gives it back
--- with the failure's reason and stack trace, and it goes where a ready job goes (prioritized
--- with a priority, else wait, or paused while the queue is paused: last in line, or with
--- opts.lifo next), its attempts made up by one.
--- Delayed jobs already due are promoted first, so they run before it. Re-sent after it landed,
--- the call answers where the job went again.
--- @key active       `emq:{q}:active`         the active list
--- @key wait         `emq:{q}:wait`           the wait list
--- @key paused       `emq:{q}:paused`         the paused list
--- @key delayed      `emq:{q}:delayed`        the delayed set, scored by run-at
--- @key prioritized  `emq:{q}:prioritized`    the prioritized set
--- @key pc           `emq:{q}:pc`             the counter that orders jobs of one priority
--- @key stalled      `emq:{q}:stalled`        the stalled set
--- @key meta         `emq:{q}:meta`           the queue's meta hash
--- @key events       `emq:{q}:events`         the event stream
--- @key marker       `emq:{q}:marker`         the marker idle workers block on
--- @key job          `emq:{q}:<job_id>`       the job's hash
--- @key lock         `emq:{q}:<job_id>:lock`  the job's lock
--- @arg job_id      id                 the job's id
--- @arg token       string(non-empty)  the worker's lock token
--- @arg now         int(0..) = @now    the caller's clock, in milliseconds
--- @arg reason      string             the failure's reason
--- @arg stacktrace  string = ""        the failure's stack trace, or ""
--- @return string  where the job went: "wait", "paused" or "prioritized"
--- @error -1 JobNotExist
--- @error -2 JobLockNotExist
--- @error -3 JobNotInState
--- @error -6 JobLockMismatch
--- @include "includes/emitEvent"
--- @include "includes/enqueueReadyJob"
--- @include "includes/landedFinish"
--- @include "includes/lifoOption"
--- @include "includes/nowArg"
--- @include "includes/promoteDueJobs"
--- @include "includes/queuePrefix"
--- @include "includes/recordFinish"
--- @include "includes/takeActiveJob"
--- @include "includes/tokenArg"

local activeKey, waitKey, pausedKey, delayedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local prioritizedKey, pcKey, stalledKey, metaKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local eventsKey, markerKey, jobKey, lockKey = KEYS[9], KEYS[10], KEYS[11], KEYS[12]
local jobId, token, now = ARGV[1], tokenArg(ARGV[2]), ARGV[3]
local reason, stacktrace = ARGV[4], ARGV[5]
nowArg(now) -- handed to Redis as the caller sent it

local prefix = queuePrefix(activeKey)
local taken = takeActiveJob(activeKey, stalledKey, jobKey, lockKey, jobId, token)
if taken ~= 0 then
  -- Re-sent after it landed: the answer was where the job went.
  local went = (taken == -2 or taken == -6) and landedFinish(prefix, jobId, token)
  if went == "wait" or went == "paused" or went == "prioritized" then
    return went
  end
  return taken
end
redis.call("HINCRBY", jobKey, "atm", "1")
redis.call("HSET", jobKey, "failedReason", reason, "stacktrace", stacktrace)
local paused = redis.call("HEXISTS", metaKey, "paused") == 1
promoteDueJobs(delayedKey, waitKey, pausedKey, prioritizedKey, pcKey, markerKey, eventsKey,
  metaKey, prefix, now, paused)
local went = enqueueReadyJob(waitKey, pausedKey, prioritizedKey, pcKey, markerKey, prefix, jobId,
  paused, lifoOption(redis.call("HGET", jobKey, "opts")))
recordFinish(prefix, token, jobId, went)
emitEvent(eventsKey, metaKey, went == "paused" and "paused" or "waiting", jobId, "prev", "active")
return went
