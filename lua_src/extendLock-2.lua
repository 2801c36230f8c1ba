--- Extends the lock of an active job while the caller still holds it: a worker's heartbeat.
--- The job also leaves the stalled set, so the next stalled check does not count it, and the
--- token's record lives on as long as the lock.
--- @key lock      `emq:{q}:<job_id>:lock`  the job's lock
--- @key stalled   `emq:{q}:stalled`        the queue's stalled set
--- @arg token     string(non-empty)  the token the worker took the lock with
--- @arg duration  int(1..)           the lock's new time to live, in milliseconds
--- @arg job_id    id                 the job's id
--- @return int  1 when the lock was extended
--- @error -2 JobLockNotExist
--- @error -6 JobLockMismatch
--- @include "includes/digitsArg"
--- @include "includes/queuePrefix"
--- @include "includes/renewLock"
--- @include "includes/tokenArg"

local lockKey, stalledKey = KEYS[1], KEYS[2]
local token = tokenArg(ARGV[1])
local duration = ARGV[2] -- as the caller sent it: Redis reads it
digitsArg(duration, "duration", 1)
local jobId = ARGV[3]

local lockState = renewLock(queuePrefix(stalledKey), lockKey, stalledKey, token, duration, jobId)
if lockState ~= 0 then
  return lockState
end
return 1
