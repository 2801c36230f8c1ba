--- Retries an active job later: back to delayed after a backoff of base * 2^(attempt - 1), plus
--- the jitter the caller drew. The lock is released and the attempts made go up by one. Re-sent
--- after it landed, the call answers the same delay again.
--- @key active   `emq:{q}:active`           the active list
--- @key delayed  `emq:{q}:delayed`          the delayed set, scored by run-at
--- @key events   `emq:{q}:events`           the event stream
--- @key stalled  `emq:{q}:stalled`          the stalled set
--- @key meta     `emq:{q}:meta`             the queue's meta hash
--- @key marker   `emq:{q}:marker`           the marker idle workers block on
--- @key job      `emq:{q}:<job_id>`         the job's hash
--- @key lock     `emq:{q}:<job_id>:lock`    the job's lock
--- @arg job_id  id                 the job's id
--- @arg token   string(non-empty)  the worker's lock token
--- @arg now     int(0..) = @now    the caller's clock, in milliseconds
--- @arg base    int(0..)           the first retry's delay, in milliseconds
--- @arg jitter  number(0..<1) = 0  a fraction of the delay to add (0: none)
--- @return int  the delay, in milliseconds
--- @error -1 JobNotExist
--- @error -2 JobLockNotExist
--- @error -3 JobNotInState
--- @error -6 JobLockMismatch
--- @include "includes/emitEvent"
--- @include "includes/fractionArg"
--- @include "includes/intArg"
--- @include "includes/landedFinish"
--- @include "includes/nowArg"
--- @include "includes/queuePrefix"
--- @include "includes/recordFinish"
--- @include "includes/signalWork"
--- @include "includes/takeActiveJob"
--- @include "includes/tokenArg"

local activeKey, delayedKey, eventsKey, stalledKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local metaKey, markerKey, jobKey, lockKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local jobId, token, now = ARGV[1], tokenArg(ARGV[2]), nowArg(ARGV[3])
local base, jitter = intArg(ARGV[4], "base", 0), fractionArg(ARGV[5], "jitter")

local prefix = queuePrefix(activeKey)
local taken = takeActiveJob(activeKey, stalledKey, jobKey, lockKey, jobId, token)
if taken ~= 0 then
  -- Re-sent after it landed: the answer was the delay.
  local answer = (taken == -2 or taken == -6) and landedFinish(prefix, jobId, token)
  if answer and string.find(answer, "^%d+$") then
    return tonumber(answer)
  end
  return taken
end
local attemptsMade = redis.call("HINCRBY", jobKey, "atm", "1")
-- The call's own backoff, not the job's option (includes/backoffDelay.lua, moveToFinished-14):
-- base * 2^(attempt - 1), and the jitter's fraction of that on top.
local delay = base * 2 ^ (attemptsMade - 1)
delay = math.floor(delay + delay * jitter)
redis.call("HSET", jobKey, "delay", delay)
recordFinish(prefix, token, jobId, delay)
redis.call("ZADD", delayedKey, now + delay, jobId)
signalWork(markerKey, now + delay)
emitEvent(eventsKey, metaKey, "delayed", jobId, "delay", delay, "prev", "active")
return delay
