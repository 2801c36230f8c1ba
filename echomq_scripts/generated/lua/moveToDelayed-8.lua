--- Retries an active job later: back to delayed after a backoff of base * 2^(attempt - 1), plus
--- the jitter the caller drew. The lock is released and the attempts made go up by one.
--- @key active   `emq:{q}:active`           the active list
--- @key delayed  `emq:{q}:delayed`          the delayed set, scored by run-at
--- @key events   `emq:{q}:events`           the event stream
--- @key stalled  `emq:{q}:stalled`          the stalled set
--- @key meta     `emq:{q}:meta`             the queue's meta hash
--- @key marker   `emq:{q}:marker`           the marker idle workers block on
--- @key job      `emq:{q}:<job_id>`         the job's hash
--- @key lock     `emq:{q}:<job_id>:lock`    the job's lock
--- @arg job_id  string  the job's id
--- @arg token   string  the worker's lock token
--- @arg now     int     the caller's clock, in milliseconds
--- @arg base    int     the first retry's delay, in milliseconds
--- @arg jitter  number  a fraction in [0, 1) of the delay to add (0: none)
--- @return int  the delay, in milliseconds
--- @error -1 JobNotExist
--- @error -2 JobLockNotExist
--- @error -3 JobNotInState
--- @error -6 JobLockMismatch
-- A numeric argument, or a Lua error naming it: scripts read their numbers before they write
-- anything, so a caller's mistake never leaves a job half-moved.
local function numberArg(value, name)
  local number = tonumber(value)
  if not number then
    error(name .. " must be a number, got '" .. tostring(value) .. "'")
  end
  return number
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
-- The retry delay after `attempt` failed attempts: base * 2^(attempt - 1), plus `jitter` (a
-- fraction in [0, 1) that the caller drew: Lua's math.random is not random inside Redis) of it.
local function backoffDelay(base, attempt, jitter)
  local delay = base * 2 ^ (attempt - 1)
  return math.floor(delay + delay * jitter)
end
-- Appends an event to the queue's stream, trimmed to about the length the queue's meta hash
-- sets in "max-events" (10000 when unset).
local function emitEvent(eventsKey, metaKey, event, jobId, ...)
  local maxEvents = tonumber(redis.call("HGET", metaKey, "max-events")) or 10000
  redis.call("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", event, "jobId", jobId, ...)
end
-- The marker is a sorted set with one member, "next", whose score says when work is due: 0 for
-- now, a timestamp for the next delayed job. Idle workers block on it (BZPOPMIN).
local function signalWork(markerKey, dueAt)
  redis.call("ZADD", markerKey, "LT", dueAt, "next")
end

-- Sets the marker from the queue's state after jobs left or arrived.
local function refreshMarker(markerKey, waitKey, prioritizedKey, delayedKey, paused)
  if not paused and (redis.call("LLEN", waitKey) > 0 or redis.call("ZCARD", prioritizedKey) > 0) then
    redis.call("ZADD", markerKey, 0, "next")
    return
  end
  local nextDelayed = redis.call("ZRANGE", delayedKey, 0, 0, "WITHSCORES")
  if nextDelayed[2] then
    redis.call("ZADD", markerKey, nextDelayed[2], "next")
  else
    redis.call("DEL", markerKey)
  end
end

local jobId, now = ARGV[1], numberArg(ARGV[3], "now")
local base, jitter = numberArg(ARGV[4], "base"), numberArg(ARGV[5], "jitter")
local lockState = checkLock(KEYS[8], ARGV[2])
if lockState ~= 0 then
  return lockState
end
if redis.call("EXISTS", KEYS[7]) == 0 then
  return -1
end
if redis.call("LREM", KEYS[1], -1, jobId) == 0 then
  return -3
end
redis.call("DEL", KEYS[8])
redis.call("SREM", KEYS[4], jobId)
local attemptsMade = redis.call("HINCRBY", KEYS[7], "atm", 1)
local delay = backoffDelay(base, attemptsMade, jitter)
redis.call("HSET", KEYS[7], "delay", delay)
redis.call("ZADD", KEYS[2], now + delay, jobId)
signalWork(KEYS[6], now + delay)
emitEvent(KEYS[3], KEYS[5], "delayed", jobId, "delay", delay, "prev", "active")
return delay
