--- A worker gives an active job back without running it (a rate-limit error, say): the job
--- leaves active and goes where workers take it next, first in line (with a priority, first
--- among the jobs of its priority; paused while the queue is paused). Its attempts made do not
--- change. Answers the rate limiter's wait (as getRateLimitTtl-2 with the queue's stored
--- limit), so the worker knows how long to hold off. Re-sent after it landed, the call answers
--- the limiter's wait again.
--- @key active       `emq:{q}:active`         the active list
--- @key wait         `emq:{q}:wait`           the wait list
--- @key paused       `emq:{q}:paused`         the paused list
--- @key prioritized  `emq:{q}:prioritized`    the prioritized set
--- @key stalled      `emq:{q}:stalled`        the stalled set
--- @key meta         `emq:{q}:meta`           the queue's meta hash
--- @key limiter      `emq:{q}:limiter`        the rate limiter's counter
--- @key events       `emq:{q}:events`         the event stream
--- @key marker       `emq:{q}:marker`         the marker idle workers block on
--- @key job          `emq:{q}:<job_id>`       the job's hash
--- @key lock         `emq:{q}:<job_id>:lock`  the job's lock
--- @arg job_id  id                 the job's id
--- @arg token   string(non-empty)  the worker's lock token
--- @return int  the ms until the rate limiter allows a pickup, 0 when it does now
--- @error -1 JobNotExist
--- @error -2 JobLockNotExist
--- @error -3 JobNotInState
--- @error -6 JobLockMismatch
--- @include "includes/emitEvent"
--- @include "includes/landedFinish"
--- @include "includes/pushPrioritizedFirst"
--- @include "includes/pushReady"
--- @include "includes/queuePrefix"
--- @include "includes/rateLimitTtl"
--- @include "includes/recordFinish"
--- @include "includes/takeActiveJob"
--- @include "includes/tokenArg"

local activeKey, waitKey, pausedKey, prioritizedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local stalledKey, metaKey, limiterKey, eventsKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local markerKey, jobKey, lockKey = KEYS[9], KEYS[10], KEYS[11]
local jobId, token = ARGV[1], tokenArg(ARGV[2])

local prefix = queuePrefix(activeKey)
local taken = takeActiveJob(activeKey, stalledKey, jobKey, lockKey, jobId, token)
if taken == -2 or taken == -6 then
  -- Re-sent after it landed: answered as the first call was, with the limiter's wait now.
  if landedFinish(prefix, jobId, token) ~= "returned" then
    return taken
  end
elseif taken ~= 0 then
  return taken
else
  local priority = tonumber(redis.call("HGET", jobKey, "priority")) or 0
  local paused = redis.call("HEXISTS", metaKey, "paused") == 1
  local went
  if priority > 0 then
    went = pushPrioritizedFirst(prioritizedKey, markerKey, paused, jobId, priority)
  else
    went = pushReady(waitKey, pausedKey, markerKey, paused, jobId, true)
  end
  recordFinish(prefix, token, jobId, "returned")
  emitEvent(eventsKey, metaKey, went == "paused" and "paused" or "waiting", jobId, "prev", "active")
end
return rateLimitTtl(limiterKey, metaKey, 0)
