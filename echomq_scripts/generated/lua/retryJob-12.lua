--- Retries an active job now, without a backoff: the worker that holds its lock gives it back
--- with the failure's reason and stack trace, and it goes where a ready job goes (prioritized
--- with a priority, else wait, or paused while the queue is paused: last in line, or with
--- opts.lifo next), its attempts made up by one.
--- Delayed jobs already due are promoted first, so they run before it. Re-sent after it landed,
--- the call answers where the job went again.
--- @key active       `emq:{q}:active`         the active list
--- @key wait         `emq:{q}:wait`           the wait list
--- @key paused       `emq:{q}:paused`         the paused list
--- @key delayed      `emq:{q}:delayed`        the delayed set, scored by run-at
--- @key prioritized  `emq:{q}:prioritized`    the prioritized set
--- @key pc           `emq:{q}:pc`             the counter that orders jobs of one priority
--- @key stalled      `emq:{q}:stalled`        the stalled set
--- @key meta         `emq:{q}:meta`           the queue's meta hash
--- @key events       `emq:{q}:events`         the event stream
--- @key marker       `emq:{q}:marker`         the marker idle workers block on
--- @key job          `emq:{q}:<job_id>`       the job's hash
--- @key lock         `emq:{q}:<job_id>:lock`  the job's lock
--- @arg job_id      id                 the job's id
--- @arg token       string(non-empty)  the worker's lock token
--- @arg now         int(0..) = @now    the caller's clock, in milliseconds
--- @arg reason      string             the failure's reason
--- @arg stacktrace  string = ""        the failure's stack trace, or ""
--- @return string  where the job went: "wait", "paused" or "prioritized"
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
-- Priorities are scored priority * 2^32 + a queue-wide counter, so jobs of one priority leave
-- in the order they arrived. 2^53 bounds the score: priorities go up to 2^21 - 1.
local function priorityScore(priority, pcKey)
  return priority * 4294967296 + redis.call("INCR", pcKey) % 4294967296
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

-- Puts a ready job with a priority into prioritized, also while the queue is paused (workers
-- are woken only when it is not).
local function pushPrioritized(prioritizedKey, pcKey, markerKey, paused, jobId, priority)
  redis.call("ZADD", prioritizedKey, priorityScore(priority, pcKey), jobId)
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

-- Puts a job that became ready where workers take it, by the priority its hash holds; without
-- one, with `lifo` (a job run again whose options set it), where workers take next. Returns the
-- state it went to.
local function enqueueReadyJob(waitKey, pausedKey, prioritizedKey, pcKey, markerKey, prefix, jobId,
    paused, lifo)
  local priority = tonumber(redis.call("HGET", prefix .. jobId, "priority")) or 0
  if priority > 0 then
    return pushPrioritized(prioritizedKey, pcKey, markerKey, paused, jobId, priority)
  end
  return pushReady(waitKey, pausedKey, markerKey, paused, jobId, lifo)
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
-- Whether a job's options (the JSON its add stored) set lifo to JSON true: a job that goes to
-- wait goes where workers take it next. Options that never name it, the common case, are not
-- decoded; the decode is its own, not jobOptions', so that an add that includes this pays for no
-- other function (each costs every call a closure, make bench).
local function lifoOption(opts)
  if opts == nil or not string.find(opts, '"lifo"', 1, true) then
    return false
  end
  local ok, decoded = pcall(cjson.decode, opts)
  return ok and type(decoded) == "table" and decoded.lifo == true
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

-- Moves every delayed job that is due by `now` (the caller's clock as it sent it, see pickup) to
-- where it can run: at most 1000 per call, so one call stays short however many are due.
-- Not through includes/promoteJob.lua, the promotion by hand: a due job keeps its last delay,
-- and each included function costs every pickup a closure (docs/benchmarks.md).
local function promoteDueJobs(delayedKey, waitKey, pausedKey, prioritizedKey, pcKey, markerKey,
    eventsKey, metaKey, prefix, now, paused)
  local due = redis.call("ZRANGEBYSCORE", delayedKey, "-inf", now, "LIMIT", "0", "1000")
  for _, jobId in ipairs(due) do
    redis.call("ZREM", delayedKey, jobId)
    local state = enqueueReadyJob(waitKey, pausedKey, prioritizedKey, pcKey, markerKey, prefix,
      jobId, paused)
    emitEvent(eventsKey, metaKey, state == "paused" and "paused" or "waiting", jobId,
      "prev", "delayed")
  end
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

local activeKey, waitKey, pausedKey, delayedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local prioritizedKey, pcKey, stalledKey, metaKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local eventsKey, markerKey, jobKey, lockKey = KEYS[9], KEYS[10], KEYS[11], KEYS[12]
local jobId, token, now = ARGV[1], tokenArg(ARGV[2]), ARGV[3]
local reason, stacktrace = ARGV[4], ARGV[5]
nowArg(now) -- handed to Redis as the caller sent it

local prefix = queuePrefix(activeKey)
local taken = takeActiveJob(activeKey, stalledKey, jobKey, lockKey, jobId, token)
if taken ~= 0 then
  -- Re-sent after it landed: the answer was where the job went.
  local went = (taken == -2 or taken == -6) and landedFinish(prefix, jobId, token)
  if went == "wait" or went == "paused" or went == "prioritized" then
    return went
  end
  return taken
end
redis.call("HINCRBY", jobKey, "atm", "1")
redis.call("HSET", jobKey, "failedReason", reason, "stacktrace", stacktrace)
local paused = redis.call("HEXISTS", metaKey, "paused") == 1
promoteDueJobs(delayedKey, waitKey, pausedKey, prioritizedKey, pcKey, markerKey, eventsKey,
  metaKey, prefix, now, paused)
local went = enqueueReadyJob(waitKey, pausedKey, prioritizedKey, pcKey, markerKey, prefix, jobId,
  paused, lifoOption(redis.call("HGET", jobKey, "opts")))
recordFinish(prefix, token, jobId, went)
emitEvent(eventsKey, metaKey, went == "paused" and "paused" or "waiting", jobId, "prev", "active")
return went
