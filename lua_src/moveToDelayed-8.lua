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
--- @arg now     int(0..)           the caller's clock, in milliseconds
--- @arg base    int(0..)           the first retry's delay, in milliseconds
--- @arg jitter  number(0..<1)      a fraction of the delay to add (0: none)
--- @return int  the delay, in milliseconds
--- @error -1 JobNotExist
--- @error -2 JobLockNotExist
--- @error -3 JobNotInState
--- @error -6 JobLockMismatch
--- @include "includes/backoffDelay"
--- @include "includes/checkLock"
--- @include "includes/emitEvent"
--- @include "includes/fractionArg"
--- @include "includes/intArg"
--- @include "includes/landedFinish"
--- @include "includes/nowArg"
--- @include "includes/queuePrefix"
--- @include "includes/recordFinish"
--- @include "includes/signalWork"
--- @include "includes/tokenArg"

local jobId, token, now = ARGV[1], tokenArg(ARGV[2]), nowArg(ARGV[3])
local prefix = queuePrefix(KEYS[1])
local base, jitter = intArg(ARGV[4], "base", 0), fractionArg(ARGV[5], "jitter")
local lockState = checkLock(KEYS[8], token)
if lockState ~= 0 then
  -- Re-sent after it landed: the answer was the delay.
  local answer = landedFinish(prefix, jobId, token)
  if answer and string.find(answer, "^%d+$") then
    return tonumber(answer)
  end
  return lockState
end
if redis.call("EXISTS", KEYS[7]) == 0 then
  return -1
end
if redis.call("LREM", KEYS[1], "-1", jobId) == 0 then
  return -3
end
redis.call("DEL", KEYS[8])
redis.call("SREM", KEYS[4], jobId)
local attemptsMade = redis.call("HINCRBY", KEYS[7], "atm", "1")
local delay = backoffDelay(base, attemptsMade, jitter)
redis.call("HSET", KEYS[7], "delay", delay)
recordFinish(prefix, token, jobId, delay)
redis.call("ZADD", KEYS[2], now + delay, jobId)
signalWork(KEYS[6], now + delay)
emitEvent(KEYS[3], KEYS[5], "delayed", jobId, "delay", delay, "prev", "active")
return delay
