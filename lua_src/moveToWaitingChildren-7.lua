--- Moves an active job to waiting-children while it has pending children: a worker whose job
--- added children (naming it as their parent_id) hands the job over until they are done; the
--- last one moves it back to where a ready job goes, and a worker picks it up again. Verifies
--- the lock token first, then that the job exists and has no failed child (-9). With child_id,
--- only that child being pending counts. Nothing pending: the job stays active, with its lock.
--- Re-sent after it landed, the call answers 1 again.
--- @key active            `emq:{q}:active`            the active list
--- @key waiting_children  `emq:{q}:waiting-children`  the waiting-children set
--- @key stalled           `emq:{q}:stalled`           the stalled set
--- @key events            `emq:{q}:events`            the event stream
--- @key meta              `emq:{q}:meta`              the queue's meta hash
--- @key job               `emq:{q}:<job_id>`          the job's hash
--- @key lock              `emq:{q}:<job_id>:lock`     the job's lock
--- @arg job_id    id                 the job's id
--- @arg token     string(non-empty)  the worker's lock token
--- @arg now       int(0..) = @now    the caller's clock, in milliseconds
--- @arg child_id  id? = ""           one child to wait for, or "" for any pending child
--- @return int  1 when the job moved to waiting-children, 0 when nothing is pending (it stays
---     active)
--- @error -1 JobNotExist
--- @error -2 JobLockNotExist
--- @error -3 JobNotInState
--- @error -6 JobLockMismatch
--- @error -9 JobHasFailedChildren
--- @include "includes/checkLock"
--- @include "includes/emitEvent"
--- @include "includes/landedFinish"
--- @include "includes/nowArg"
--- @include "includes/queuePrefix"
--- @include "includes/recordFinish"
--- @include "includes/tokenArg"

local activeKey, waitingChildrenKey, stalledKey, eventsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local metaKey, jobKey, lockKey = KEYS[5], KEYS[6], KEYS[7]
local jobId, token, now, childId = ARGV[1], tokenArg(ARGV[2]), ARGV[3], ARGV[4]
nowArg(now) -- added to a set as the caller sent it

local prefix = queuePrefix(activeKey)
local lockState = checkLock(lockKey, token)
if lockState ~= 0 then
  if landedFinish(prefix, jobId, token) == "waiting-children" then
    return 1 -- re-sent after it landed
  end
  return lockState
end
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end
if redis.call("EXISTS", jobKey .. ":unsuccessful") == 1 then
  return -9
end
local pending
if childId ~= "" then
  pending = redis.call("SISMEMBER", jobKey .. ":dependencies", prefix .. childId) == 1
else
  pending = redis.call("SCARD", jobKey .. ":dependencies") > 0
end
if not pending then
  return 0
end
if redis.call("LREM", activeKey, "-1", jobId) == 0 then
  return -3
end
redis.call("DEL", lockKey)
redis.call("SREM", stalledKey, jobId)
redis.call("ZADD", waitingChildrenKey, now, jobId)
recordFinish(prefix, token, jobId, "waiting-children")
emitEvent(eventsKey, metaKey, "waiting-children", jobId, "prev", "active")
return 1
