--- Releases a job's lock when the caller's token holds it.
--- The job stays where it is, held by no worker: an active one is then the stalled check's. The
--- token's record goes too when it names the job, as when the lock runs out.
--- @key lock  `emq:{q}:<job_id>:lock`  the job's lock
--- @arg job_id  id                 the job's id
--- @arg token   string(non-empty)  the token that holds the lock
--- @return int  1 when the lock was released, 0 when it is gone or another token holds it
--- @include "includes/checkJobKey"
--- @include "includes/tokenArg"
--- @include "includes/tokenKey"
--- @include "includes/tokenRecord"

local lockKey = KEYS[1]
local jobId = ARGV[1]
local token = tokenArg(ARGV[2])

local prefix = checkJobKey(lockKey, jobId, ":lock")
if redis.call("GET", lockKey) ~= token then
  return 0
end
redis.call("DEL", lockKey)
if tokenRecord(prefix, token) == jobId then
  redis.call("DEL", tokenKey(prefix, token))
end
return 1
