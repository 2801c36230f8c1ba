-- Checks that `token` holds the job's lock: 0 when it does, else the failure code (-2 when the
-- lock is gone, -6 when another worker holds it).
local function checkLock(lockKey, token)
  local holder = redis.call("GET", lockKey)
  if not holder then
    return -2
  end
  if holder ~= token then
    return -6
  end
  return 0
end
