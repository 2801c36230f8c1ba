--- @include "checkLock"
--- @include "tokenKey"

-- Extends a job's lock by `duration` ms (the text the caller sent) when `token` holds it, and
-- returns 0; else the lock's code (checkLock), and writes nothing. The token's record lives as
-- long as the lock (renewed, not rewritten: it may hold the answer of the finish that handed the
-- token on), and the job leaves the stalled set, so the next stalled check does not count it.
local function renewLock(prefix, lockKey, stalledKey, token, duration, jobId)
  local lockState = checkLock(lockKey, token)
  if lockState ~= 0 then
    return lockState
  end
  redis.call("SET", lockKey, token, "PX", duration)
  redis.call("PEXPIRE", tokenKey(prefix, token), duration)
  redis.call("SREM", stalledKey, jobId)
  return 0
end
