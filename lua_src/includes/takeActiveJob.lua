--- @include "checkLock"

-- Takes an active job back from the worker whose token holds its lock: out of active, its lock
-- and its stalled mark gone. Returns 0 when it did, else the failure code in the order the
-- transitions check them, before any write: -2 or -6 (the lock), -1 (no job), -3 (not active).
local function takeActiveJob(activeKey, stalledKey, jobKey, lockKey, jobId, token)
  local lockState = checkLock(lockKey, token)
  if lockState ~= 0 then
    return lockState
  end
  if redis.call("EXISTS", jobKey) == 0 then
    return -1
  end
  if redis.call("LREM", activeKey, "-1", jobId) == 0 then
    return -3
  end
  redis.call("DEL", lockKey)
  redis.call("SREM", stalledKey, jobId)
  return 0
end
