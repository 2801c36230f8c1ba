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
-- A fraction argument: a number from 0 up to, not including, 1.
local function fractionArg(value, name)
  local number = tonumber(value)
  if not number or not (number >= 0 and number < 1) then
    error(name .. " must be a number from 0 up to 1 (not 1 itself), got '" .. tostring(value) .. "'")
  end
  return number
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
-- The marker is a sorted set with one member, "next", whose score says when work is due: 0 for
-- now, a timestamp for the next delayed job. Idle workers block on it (BZPOPMIN).

-- Lowers the marker to `dueAt`, adding it when missing. A busy queue's marker already says 0:
-- reading it first spares the write (ZSCORE costs the server less than a ZADD that changes
-- nothing).
local function signalWork(markerKey, dueAt)
  local score = redis.call("ZSCORE", markerKey, "next")
  if not score or tonumber(score) > dueAt then
    redis.call("ZADD", markerKey, dueAt, "next")
  end
end
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
-- A worker's lock token: any text but the empty one, which would name no pickup.
local function tokenArg(value)
  if value == "" then
    error("token must not be empty")
  end
  return value
end

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
