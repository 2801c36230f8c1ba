--- Completes or fails an active job, and optionally picks the next one up in the same call.
--- Verifies the lock token first, then that the job exists and is active. A completion stores the
--- return value; a failure stores the reason and stack trace and, while attempts are left, goes
--- to delayed with a backoff instead of to failed. A finished job is scored by its finish time,
--- counted in the metrics, kept or removed by removeOnComplete / removeOnFail, and releases its
--- deduplication id. A completed child that was its parent's last pending one moves the parent
--- out of waiting-children; a child that fails for good leaves its parent waiting.
--- @key wait              `emq:{q}:wait`              the wait list
--- @key active            `emq:{q}:active`            the active list
--- @key prioritized       `emq:{q}:prioritized`       the prioritized set
--- @key events            `emq:{q}:events`            the event stream
--- @key stalled           `emq:{q}:stalled`           the stalled set
--- @key limiter           `emq:{q}:limiter`           the rate limiter's counter
--- @key delayed           `emq:{q}:delayed`           the delayed set, scored by run-at
--- @key paused            `emq:{q}:paused`            the paused list
--- @key meta              `emq:{q}:meta`              the queue's meta hash
--- @key pc                `emq:{q}:pc`                the counter that orders jobs of one priority
--- @key marker            `emq:{q}:marker`            the marker idle workers block on
--- @key finished          `emq:{q}:<outcome>`         the completed or the failed set
--- @key metrics           `emq:{q}:metrics:<outcome>` the count of completed or of failed jobs
--- @key waiting_children  `emq:{q}:waiting-children`  the waiting-children set
--- @arg job_id          string  the job's id
--- @arg token           string  the worker's lock token
--- @arg now             int     the caller's clock, in milliseconds
--- @arg outcome         string  "completed" or "failed"
--- @arg result          string  the return value (JSON) or the failure reason
--- @arg stacktrace      string  the failure's stack trace, or ""
--- @arg jitter          number  a fraction in [0, 1) of the retry delay to add (0: none)
--- @arg fetch_next      bool    pick the next job up for the same worker
--- @arg lock_duration   int     the next job's lock time to live, in milliseconds
--- @arg limit_max       int     at most this many jobs per limit_duration (0: no limit)
--- @arg limit_duration  int     the rate limiter's window, in milliseconds
--- @arg concurrency     int     at most this many jobs active in the queue (0: no cap)
--- @return tuple[string, string, hash, int]  where the job went ("completed", "failed" or "delayed"), then the next job as moveToActive answers it
--- @error -1 JobNotExist
--- @error -2 JobLockNotExist
--- @error -3 JobNotInState
--- @error -6 JobLockMismatch
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait"): job keys are built
-- from it, so they carry the queue's hash tag and land on its Cluster slot.
local function queuePrefix(key)
  return string.match(key, "^(.*:)[^:]*$")
end
-- A numeric argument, or a Lua error naming it: scripts read their numbers before they write
-- anything, so a caller's mistake never leaves a job half-moved.
local function numberArg(value, name)
  local number = tonumber(value)
  if not number then
    error(name .. " must be a number, got '" .. tostring(value) .. "'")
  end
  return number
end
-- A job's options, from the JSON its add stored: always a table, whatever was stored, so a
-- script can read them before it writes anything. JSON null reads as absent.
local function jobOptions(raw)
  local ok, decoded = pcall(cjson.decode, raw or "{}")
  if not ok or type(decoded) ~= "table" then
    return {}
  end
  for name, value in pairs(decoded) do
    if value == cjson.null then
      decoded[name] = nil
    end
  end
  return decoded
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
-- Applies removeOnComplete / removeOnFail to a finished set: true removes the job that just
-- finished, a number N keeps the newest N, { age = seconds, count = N } drops older jobs and
-- keeps at most N. Removed jobs lose their hash and their companion keys.
local function removeJobKeys(prefix, jobId)
  local jobKey = prefix .. jobId
  redis.call("DEL", jobKey, jobKey .. ":lock", jobKey .. ":dependencies", jobKey .. ":processed")
end

local function applyRetention(finishedKey, prefix, jobId, rule, now)
  if rule == nil or rule == false then
    return
  end
  local drop = {}
  if rule == true then
    drop = { jobId }
  elseif type(rule) == "number" or type(rule) == "table" then
    -- Anything but a number counts as not given: a bad rule must not fail a finished job.
    local keep = tonumber(type(rule) == "number" and rule or rule.count)
    local age = type(rule) == "table" and tonumber(rule.age) or nil
    keep = keep and math.max(math.floor(keep), 0)
    if age then
      local old = redis.call("ZRANGEBYSCORE", finishedKey, "-inf", now - age * 1000)
      for _, id in ipairs(old) do
        drop[#drop + 1] = id
      end
    end
    if keep then
      local excess = redis.call("ZRANGE", finishedKey, 0, -keep - 1)
      for _, id in ipairs(excess) do
        drop[#drop + 1] = id
      end
    end
  end
  for _, id in ipairs(drop) do
    redis.call("ZREM", finishedKey, id)
    removeJobKeys(prefix, id)
  end
end
-- Releases the deduplication id a finished job held (`dedupId`, its "deid" field, or nil),
-- unless another job holds it by now.
local function releaseDedupId(prefix, jobId, dedupId)
  if dedupId and redis.call("GET", prefix .. "de:" .. dedupId) == jobId then
    redis.call("DEL", prefix .. "de:" .. dedupId)
  end
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

-- Priorities are scored priority * 2^32 + a queue-wide counter, so jobs of one priority leave
-- in the order they arrived. 2^53 bounds the score: priorities go up to 2^21 - 1.
local function priorityScore(priority, pcKey)
  return priority * 4294967296 + redis.call("INCR", pcKey) % 4294967296
end

-- Puts a job that is ready to run where workers take it: prioritized when it has a priority,
-- else paused when the queue is paused, else wait (LPUSH: workers take from the other end).
-- Returns the state it went to.
local function enqueueReady(queue, jobId, priority)
  if priority > 0 then
    redis.call("ZADD", queue.prioritized, priorityScore(priority, queue.pc), jobId)
    if redis.call("HEXISTS", queue.meta, "paused") == 0 then
      signalWork(queue.marker, 0)
    end
    return "prioritized"
  end
  if redis.call("HEXISTS", queue.meta, "paused") == 1 then
    redis.call("LPUSH", queue.paused, jobId)
    return "paused"
  end
  redis.call("LPUSH", queue.wait, jobId)
  signalWork(queue.marker, 0)
  return "wait"
end

-- Moves every delayed job that is due to where it can run (at most 1000 per call, so one call
-- stays short however many are due).
local function promoteDueJobs(queue, now)
  local due = redis.call("ZRANGEBYSCORE", queue.delayed, "-inf", now, "LIMIT", 0, 1000)
  for _, jobId in ipairs(due) do
    redis.call("ZREM", queue.delayed, jobId)
    local priority = tonumber(redis.call("HGET", queue.prefix .. jobId, "priority")) or 0
    local state = enqueueReady(queue, jobId, priority)
    emitEvent(queue.events, queue.meta, state == "paused" and "paused" or "waiting", jobId,
      "prev", "delayed")
  end
end

-- The pickup shared by moveToActive and moveToFinished's fetch-next: promote due delayed jobs,
-- respect the pause, the rate limiter (at most `limits.max` jobs per `limits.duration` ms) and
-- the concurrency cap, take the next job (wait first, else the best priority, FIFO within it),
-- lock it, make it active. Returns { jobId, fields, limitedFor }: the job, or "" and {} and the
-- milliseconds until the limiter allows another job (0 when there is simply nothing to do).
local function pickup(queue, token, lockDuration, now, limits)
  local paused = redis.call("HEXISTS", queue.meta, "paused") == 1
  promoteDueJobs(queue, now)
  if paused then
    return { "", {}, 0 }
  end
  if limits.max > 0 then
    local taken = tonumber(redis.call("GET", queue.limiter)) or 0
    if taken >= limits.max then
      return { "", {}, math.max(redis.call("PTTL", queue.limiter), 0) }
    end
  end
  if limits.concurrency > 0 and redis.call("LLEN", queue.active) >= limits.concurrency then
    return { "", {}, 0 }
  end
  -- The oldest waiting job moves to the head of active in one step; the oldest active job is
  -- therefore at the tail, where the finishing scripts' LREM starts.
  local jobId = redis.call("LMOVE", queue.wait, queue.active, "RIGHT", "LEFT")
  if not jobId then
    local best = redis.call("ZPOPMIN", queue.prioritized)
    jobId = best[1]
    if jobId then
      redis.call("LPUSH", queue.active, jobId)
    end
  end
  if not jobId then
    refreshMarker(queue.marker, queue.wait, queue.prioritized, queue.delayed, paused)
    return { "", {}, 0 }
  end
  if limits.max > 0 and redis.call("INCR", queue.limiter) == 1 then
    redis.call("PEXPIRE", queue.limiter, limits.duration)
  end
  local jobKey = queue.prefix .. jobId
  redis.call("SET", jobKey .. ":lock", token, "PX", lockDuration)
  redis.call("SREM", queue.stalled, jobId)
  redis.call("HSET", jobKey, "processedOn", now)
  emitEvent(queue.events, queue.meta, "active", jobId, "prev", "waiting")
  refreshMarker(queue.marker, queue.wait, queue.prioritized, queue.delayed, paused)
  return { jobId, redis.call("HGETALL", jobKey), 0 }
end

local queue = {
  wait = KEYS[1], active = KEYS[2], prioritized = KEYS[3], events = KEYS[4],
  stalled = KEYS[5], limiter = KEYS[6], delayed = KEYS[7], paused = KEYS[8],
  meta = KEYS[9], pc = KEYS[10], marker = KEYS[11], prefix = queuePrefix(KEYS[1]),
}
local jobId, token, now, outcome = ARGV[1], ARGV[2], numberArg(ARGV[3], "now"), ARGV[4]
local jitter = numberArg(ARGV[7], "jitter")
local limits = {
  max = numberArg(ARGV[10], "limit_max"),
  duration = numberArg(ARGV[11], "limit_duration"),
  concurrency = numberArg(ARGV[12], "concurrency"),
}
local lockDuration = numberArg(ARGV[9], "lock_duration")
local jobKey = queue.prefix .. jobId
if outcome ~= "completed" and outcome ~= "failed" then
  return redis.error_reply("ERR outcome must be 'completed' or 'failed'")
end

local lockState = checkLock(jobKey .. ":lock", token)
if lockState ~= 0 then
  return lockState
end
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end
-- Read before anything is written: a failure past this point would leave the job nowhere.
local stored = redis.call("HMGET", jobKey, "opts", "parentKey", "deid", "atm")
local opts = jobOptions(stored[1])
local parentKey, dedupId = stored[2], stored[3]
local attemptsMade = (tonumber(stored[4]) or 0) + 1
if redis.call("LREM", queue.active, -1, jobId) == 0 then
  return -3
end
redis.call("DEL", jobKey .. ":lock")
redis.call("SREM", queue.stalled, jobId)

local state = outcome

local function releaseParent()
  if not parentKey then
    return
  end
  redis.call("SREM", parentKey .. ":dependencies", jobKey)
  redis.call("HSET", parentKey .. ":processed", jobKey, ARGV[5])
  local parentId = string.sub(parentKey, #queue.prefix + 1)
  if redis.call("SCARD", parentKey .. ":dependencies") == 0
    and redis.call("ZREM", KEYS[14], parentId) == 1 then
    local priority = tonumber(redis.call("HGET", parentKey, "priority")) or 0
    enqueueReady(queue, parentId, priority)
    emitEvent(queue.events, queue.meta, "waiting", parentId, "prev", "waiting-children")
  end
end

if outcome == "failed" and attemptsMade < (tonumber(opts.attempts) or 1) then
  local base = type(opts.backoff) == "table" and tonumber(opts.backoff.delay) or 0
  local delay = backoffDelay(base, attemptsMade, jitter)
  redis.call("HSET", jobKey, "atm", attemptsMade, "failedReason", ARGV[5], "stacktrace", ARGV[6],
    "delay", delay)
  redis.call("ZADD", queue.delayed, now + delay, jobId)
  signalWork(queue.marker, now + delay)
  emitEvent(queue.events, queue.meta, "delayed", jobId, "delay", delay, "prev", "active")
  state = "delayed"
else
  if outcome == "completed" then
    redis.call("HSET", jobKey, "atm", attemptsMade, "returnvalue", ARGV[5], "finishedOn", now)
    releaseParent()
  else
    redis.call("HSET", jobKey, "atm", attemptsMade, "failedReason", ARGV[5], "stacktrace",
      ARGV[6], "finishedOn", now)
  end
  redis.call("ZADD", KEYS[12], now, jobId)
  redis.call("INCR", KEYS[13])
  releaseDedupId(queue.prefix, jobId, dedupId)
  emitEvent(queue.events, queue.meta, outcome, jobId, "prev", "active")
  local rule = opts.removeOnFail
  if outcome == "completed" then
    rule = opts.removeOnComplete
  end
  applyRetention(KEYS[12], queue.prefix, jobId, rule, now)
end
local nextJob = { "", {}, 0 }
if ARGV[8] == "1" then
  nextJob = pickup(queue, token, lockDuration, now, limits)
end
return { state, nextJob[1], nextJob[2], nextJob[3] }
