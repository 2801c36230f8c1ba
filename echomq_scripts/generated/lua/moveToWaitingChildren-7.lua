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
-- Appends an event to the queue's stream, trimmed to about the length the queue's meta hash
-- sets in "max-events" (decimal digits; unset, or anything else, reads as 10000).
local function emitEvent(eventsKey, metaKey, event, jobId, ...)
  -- Handed to XADD as the text it is: a Lua number is printed again by redis.call, which costs
  -- the server more than the whole check (make bench).
  local maxEvents = redis.call("HGET", metaKey, "max-events")
  if not maxEvents or not string.find(maxEvents, "^%d+$") then
    maxEvents = "10000"
  end
  redis.call("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", event, "jobId", jobId, ...)
end
-- A lock token names one pickup: a worker draws a new token for every moveToActive, and a finish
-- with fetch_next hands its token on to the job it picks next. The token's record, the key this
-- returns (emq:{q}:token:<token>), says which job the token holds and what its last finish
-- answered: "<held>", or "<held>:<finished>:<answer>" once it finished the job <finished> (<held>
-- is then the job a fetch-next pickup took, or empty; <answer> is where the job went, or the delay
-- of a moveToDelayed). The pickup sets it with the lock and for as long (recordToken), extendLock
-- renews both, and a finish rewrites it keeping its time to live (recordFinish), so a call a
-- client re-sends after losing the reply can be told from a new one (tokenRecord). Job ids hold
-- no ":", so the record splits at its colons.
local function tokenKey(prefix, token)
  return prefix .. "token:" .. token
end

-- The token's record (see tokenKey) as (the job it holds or held last, the job it finished or "",
-- that finish's answer or ""), or nil when the token has no record.
local function tokenRecord(prefix, token)
  local record = redis.call("GET", tokenKey(prefix, token))
  if not record then
    return nil
  end
  return string.match(record, "^([^:]*):?([^:]*):?(.*)$")
end

-- What the finish of `jobId` by `token` answered, when one landed: the answer to the same call
-- re-sent. The token's record says so while it lives, also after the job was removed by
-- retention or finished again by another token.
local function landedFinish(prefix, jobId, token)
  local _, finished, answer = tokenRecord(prefix, token)
  if finished == jobId then
    return answer
  end
  return nil
end
-- The argument checkers, intArg and the other *Arg includes, return the value or raise a Lua
-- error that names the argument: scripts read their arguments before they write anything, so a
-- caller's mistake never leaves a job half-moved. Every bound is also in the script's header, so
-- the generated wrappers refuse the same values before sending them.

-- Integers stop at 2^53 - 1, the largest a Lua number holds exactly.
local MAX_INTEGER = 9007199254740991

-- An integer argument from `low` to `high` (nil: 2^53 - 1).
local function intArg(value, name, low, high)
  local number = tonumber(value)
  high = high or MAX_INTEGER
  if not number or number % 1 ~= 0 or number < low or number > high then
    local upTo = high == MAX_INTEGER and "2^53 - 1" or tostring(high)
    error(name .. " must be an integer from " .. low .. " to " .. upTo .. ", got '"
      .. tostring(value) .. "'")
  end
  return number
end

-- An integer argument that the script hands to Redis as the caller sent it (ZADD, HSET, PX):
-- decimal digits only, from `low` up to `high` (nil: 2^53 - 1). Redis would refuse the text " 5"
-- that tonumber reads, and only after the script's first write; and a number handed to
-- redis.call costs a conversion to text. Returns the number, for sums.
local function digitsArg(value, name, low, high)
  if not string.find(value, "^%d+$") then
    error(name .. " must be an integer from " .. low .. " to "
      .. (high and tostring(high) or "2^53 - 1") .. " in decimal digits, got '" .. value .. "'")
  end
  return intArg(value, name, low, high)
end

-- The caller's clock, in ms: decimal digits, as Redis reads it. Returns the number.
local function nowArg(value)
  return digitsArg(value, "now", 0)
end
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait", "emq:{q}:7:lock"),
-- or nil when the key is not one of a queue's: job keys are built from it, so they carry the
-- queue's hash tag and land on its Cluster slot. The scripts that delete by the keys a runtime
-- passes check each against it.
local function queuePrefix(key)
  return string.match(key, "^(emq:{[^{}]*}:)")
end

-- Records the answer of a finish that picked no job up, for the time the record has left (XX:
-- never a record without a time to live).
local function recordFinish(prefix, token, finished, answer)
  redis.call("SET", tokenKey(prefix, token), ":" .. finished .. ":" .. answer, "KEEPTTL", "XX")
end
-- A worker's lock token: any text but the empty one, which would name no pickup.
local function tokenArg(value)
  if value == "" then
    error("token must not be empty")
  end
  return value
end

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
