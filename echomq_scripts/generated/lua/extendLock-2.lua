--- Extends the lock of an active job while the caller still holds it: a worker's heartbeat.
--- The job also leaves the stalled set, so the next stalled check does not count it.
--- @key lock      `emq:{q}:<job_id>:lock`  the job's lock
--- @key stalled   `emq:{q}:stalled`        the queue's stalled set
--- @arg token     string  the token the worker took the lock with
--- @arg duration  int     the lock's new time to live, in milliseconds
--- @arg job_id    string  the job's id
--- @return int  1 when the lock was extended
--- @error -2 JobLockNotExist
--- @error -6 JobLockMismatch

local holder = redis.call("GET", KEYS[1])
if not holder then
  return -2
end
if holder ~= ARGV[1] then
  return -6
end
redis.call("SET", KEYS[1], ARGV[1], "PX", ARGV[2])
redis.call("SREM", KEYS[2], ARGV[3])
return 1
