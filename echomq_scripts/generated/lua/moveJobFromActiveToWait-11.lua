--- A worker gives an active job back without running it (a rate-limit error, say): the job
--- leaves active and goes where workers take it next, first in line (with a priority, first
--- among the jobs of its priority; paused while the queue is paused). Its attempts made do not
--- change. Answers the rate limiter's wait (as getRateLimitTtl-2 with the queue's stored
--- limit), so the worker knows how long to hold off. Re-sent after it landed, the call answers
--- the limiter's wait again.
--- @key active       `emq:{q}:active`         the active list
--- @key wait         `emq:{q}:wait`           the wait list
--- @key paused       `emq:{q}:paused`         the paused list
--- @key prioritized  `emq:{q}:prioritized`    the prioritized set
--- @key stalled      `emq:{q}:stalled`        the stalled set
--- @key meta         `emq:{q}:meta`           the queue's meta hash
--- @key limiter      `emq:{q}:limiter`        the rate limiter's counter
--- @key events       `emq:{q}:events`         the event stream
--- @key marker       `emq:{q}:marker`         the marker idle workers block on
--- @key job          `emq:{q}:<job_id>`       the job's hash
--- @key lock         `emq:{q}:<job_id>:lock`  the job's lock
--- @arg job_id  id                 the job's id
--- @arg token   string(non-empty)  the worker's lock token
--- @return int  the ms until the rate limiter allows a pickup, 0 when it does now
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

-- Puts a ready job first among the jobs of its priority: the score priority * 2^32 with no
-- counter, below every score of that priority that has one (jobs that share it go in id order).
-- Also while the queue is paused; workers are woken only when it is not.
local function pushPrioritizedFirst(prioritizedKey, markerKey, paused, jobId, priority)
  redis.call("ZADD", prioritizedKey, string.format("%d", priority * 4294967296), jobId)
  if not paused then
    signalWork(markerKey, 0)
  end
  return "prioritized"
end

-- Puts a ready job without a priority where workers take it: the head of wait (they take from
-- the tail), or of paused while the queue is paused; with `lifo`, the tail, where workers take
-- next. Returns the state it went to. One function for both ends: each included function costs
-- every call of a script that includes it a closure (make bench).
local function pushReady(waitKey, pausedKey, markerKey, paused, jobId, lifo)
  local push = lifo and "RPUSH" or "LPUSH"
  if paused then
    redis.call(push, pausedKey, jobId)
    return "paused"
  end
  redis.call(push, waitKey, jobId)
  signalWork(markerKey, 0)
  return "wait"
end
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait", "emq:{q}:7:lock"),
-- or nil when the key is not one of a queue's: job keys are built from it, so they carry the
-- queue's hash tag and land on its Cluster slot. The scripts that delete by the keys a runtime
-- passes check each against it.
local function queuePrefix(key)
  return string.match(key, "^(emq:{[^{}]*}:)")
end
-- How long the rate limiter still holds pickups back, in ms, or 0 when a pickup may take a job
-- now. It holds them while it has counted at least the limit in its window: `maxJobs`, or when
-- that is 0 the queue's stored rate limit; without either, any limiter left (the one
-- rateLimit-1 sets) holds them for the time it has left.
local function rateLimitTtl(limiterKey, metaKey, maxJobs)
  if maxJobs == 0 then
    maxJobs = tonumber(redis.call("HGET", metaKey, "max")) or 0
  end
  if maxJobs > 0 and (tonumber(redis.call("GET", limiterKey)) or 0) < maxJobs then
    return 0
  end
  return math.max(redis.call("PTTL", limiterKey), 0)
end

-- Records the answer of a finish that picked no job up, for the time the record has left (XX:
-- never a record without a time to live).
local function recordFinish(prefix, token, finished, answer)
  redis.call("SET", tokenKey(prefix, token), ":" .. finished .. ":" .. answer, "KEEPTTL", "XX")
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

local activeKey, waitKey, pausedKey, prioritizedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local stalledKey, metaKey, limiterKey, eventsKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local markerKey, jobKey, lockKey = KEYS[9], KEYS[10], KEYS[11]
local jobId, token = ARGV[1], tokenArg(ARGV[2])

local prefix = queuePrefix(activeKey)
local taken = takeActiveJob(activeKey, stalledKey, jobKey, lockKey, jobId, token)
if taken == -2 or taken == -6 then
  -- Re-sent after it landed: answered as the first call was, with the limiter's wait now.
  if landedFinish(prefix, jobId, token) ~= "returned" then
    return taken
  end
elseif taken ~= 0 then
  return taken
else
  local priority = tonumber(redis.call("HGET", jobKey, "priority")) or 0
  local paused = redis.call("HEXISTS", metaKey, "paused") == 1
  local went
  if priority > 0 then
    went = pushPrioritizedFirst(prioritizedKey, markerKey, paused, jobId, priority)
  else
    went = pushReady(waitKey, pausedKey, markerKey, paused, jobId, true)
  end
  recordFinish(prefix, token, jobId, "returned")
  emitEvent(eventsKey, metaKey, went == "paused" and "paused" or "waiting", jobId, "prev", "active")
end
return rateLimitTtl(limiterKey, metaKey, 0)
