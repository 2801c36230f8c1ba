--- Picks the next job up and locks it: the pickup step of a worker.
--- Promotes due delayed jobs first; then, unless the queue is paused, the rate limiter is spent
--- or the concurrency cap is reached, takes the next job (wait first, else the best priority,
--- FIFO within a priority), locks it for the worker's token, and moves it to active.
--- @key wait         `emq:{q}:wait`         the wait list
--- @key active       `emq:{q}:active`       the active list
--- @key prioritized  `emq:{q}:prioritized`  the prioritized set
--- @key events       `emq:{q}:events`       the event stream
--- @key stalled      `emq:{q}:stalled`      the stalled set: a picked-up job leaves it
--- @key limiter      `emq:{q}:limiter`      the rate limiter's counter
--- @key delayed      `emq:{q}:delayed`      the delayed set, scored by run-at
--- @key paused       `emq:{q}:paused`       the paused list
--- @key meta         `emq:{q}:meta`         the queue's meta hash
--- @key pc           `emq:{q}:pc`           the counter that orders jobs of one priority
--- @key marker       `emq:{q}:marker`       the marker idle workers block on
--- @arg token          string  the worker's lock token
--- @arg lock_duration  int     how long the lock lives without a heartbeat, in milliseconds
--- @arg now            int     the caller's clock, in milliseconds
--- @arg limit_max      int     at most this many jobs per limit_duration (0: no limit)
--- @arg limit_duration int     the rate limiter's window, in milliseconds
--- @arg concurrency    int     at most this many jobs active in the queue (0: no cap)
--- @return tuple[string, hash, int]  the job's id and fields, or "" and {} and the milliseconds until the rate limiter allows a job (0: nothing to pick up now: empty, paused, or at the concurrency cap)
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
local limits = {
  max = numberArg(ARGV[4], "limit_max"),
  duration = numberArg(ARGV[5], "limit_duration"),
  concurrency = numberArg(ARGV[6], "concurrency"),
}
local lockDuration, now = numberArg(ARGV[2], "lock_duration"), numberArg(ARGV[3], "now")
return pickup(queue, ARGV[1], lockDuration, now, limits)
