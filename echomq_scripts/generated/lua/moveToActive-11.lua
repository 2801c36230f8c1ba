--- Picks the next job up and locks it: the pickup step of a worker.
--- Promotes due delayed jobs first; then, unless the queue is paused, the rate limiter is spent
--- or the concurrency cap is reached (the queue's own, stored in its meta hash, or else the
--- caller's), takes the next job (wait first, else the best priority,
--- FIFO within a priority), locks it for the worker's token, and moves it to active. A token
--- names one pickup: re-sent with a token that still holds its job, it answers that job again
--- and takes no other.
--- @key wait         `emq:{q}:wait`         the wait list
--- @key active       `emq:{q}:active`       the active list
--- @key prioritized  `emq:{q}:prioritized`  the prioritized set
--- @key events       `emq:{q}:events`       the event stream
--- @key stalled      (unused) `emq:{q}:stalled`  the stalled set: every path out of active clears
---     a job's mark, so a job taken from wait or prioritized has none
--- @key limiter      `emq:{q}:limiter`      the rate limiter's counter
--- @key delayed      `emq:{q}:delayed`      the delayed set, scored by run-at
--- @key paused       `emq:{q}:paused`       the paused list
--- @key meta         `emq:{q}:meta`         the queue's meta hash
--- @key pc           `emq:{q}:pc`           the counter that orders jobs of one priority
--- @key marker       `emq:{q}:marker`       the marker idle workers block on
--- @arg token          string(non-empty) = @token  the worker's lock token, new for every pickup
--- @arg lock_duration  int(1..) = 30000   how long the lock lives without a heartbeat, in
---     milliseconds
--- @arg now            int(0..) = @now    the caller's clock, in milliseconds
--- @arg limit_max      int(0..) = 0       at most this many jobs per limit_duration (0: no limit);
---     a rate limit the queue stores replaces it and limit_duration
--- @arg limit_duration int(0..) = 0       the rate limiter's window, in milliseconds
--- @arg concurrency    int(0..) = 0       at most this many jobs active in the queue (0: no cap);
---     a cap the queue stores holds too
--- @return Pickup(job_id: string, fields: hash, limit_delay: int, token: string)  the job's id
---     and fields, or "" and {} and the milliseconds until the rate limiter allows a job (0:
---     nothing to pick up now: empty, paused, or at the concurrency cap); and the token, which
---     the job's heartbeats and its finish take (a runtime that drew it learns it here)
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

-- The job `token` holds now: the one its record names, while that job's lock holds the token.
local function heldJob(prefix, token)
  local held = tokenRecord(prefix, token)
  if held and held ~= "" and redis.call("GET", prefix .. held .. ":lock") == token then
    return held
  end
  return nil
end

-- The caller's clock, in ms: decimal digits, as Redis reads it. Returns the number.
local function nowArg(value)
  return digitsArg(value, "now", 0)
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

-- Sets the marker (see signalWork) from the queue's state after a pickup took a job or found
-- none: 0 while ready work remains, else the next delayed job's run-at, else no marker.
local function refreshMarker(markerKey, waitKey, prioritizedKey, delayedKey, paused)
  if not paused and (redis.call("LLEN", waitKey) > 0 or redis.call("ZCARD", prioritizedKey) > 0) then
    signalWork(markerKey, 0)
    return
  end
  local nextDelayed = redis.call("ZRANGE", delayedKey, "0", "0", "WITHSCORES")
  if nextDelayed[2] then
    redis.call("ZADD", markerKey, nextDelayed[2], "next")
  else
    redis.call("DEL", markerKey)
  end
end

-- Sets the token's record (see tokenKey): it holds `held`, and, when `finished` is given, it
-- finished that job first with `answer`. It lives `ttl` ms, as long as the lock it goes with.
local function recordToken(prefix, token, held, finished, answer, ttl)
  local record = finished and (held .. ":" .. finished .. ":" .. answer) or held
  redis.call("SET", tokenKey(prefix, token), record, "PX", ttl)
end
-- Appends an event without trimming the stream: for a pickup's `active` event, which the job's
-- finish (or the next add) follows with a trim. Reading the limit and trimming cost the server
-- more than the rest of a pickup's event (make bench); BullMQ's pickup does not trim either.
local function emitUntrimmedEvent(eventsKey, event, jobId, ...)
  redis.call("XADD", eventsKey, "*", "event", event, "jobId", jobId, ...)
end

-- The pickup shared by moveToActive and moveToFinished's fetch-next: promote due delayed jobs,
-- respect the pause, the rate limiter (at most `limitMax` jobs per `limitDuration` ms) and the
-- concurrency cap, each as the queue's meta sets it or else as the caller asks, take the next job (wait first, else the best priority, FIFO within it), lock
-- it for `token`, record that the token holds it (`finished` and `answer`: the job the same call
-- finished first and where it went, or nil), make it active. Returns { jobId, fields, limitedFor }:
-- the job, or "" and {} and the milliseconds until the limiter allows another job (0 when there is
-- nothing to do now).
-- The keys come first, in the order of the two scripts' KEYS (which share them), as parameters:
-- a table of them, built on every call, cost the server more than some of the calls it names
-- (make bench). `settings` is the caller's `HGETALL meta`: whether the queue is paused, and the
-- queue's own limits, which every worker of every runtime obeys (setGlobalRateLimit-1,
-- setGlobalConcurrency-1). The hash is small, and reading it whole cost the server less than an
-- HMGET of the four fields (make bench). `now` and `lockDuration` are the caller's text as it sent it: Redis reads them,
-- and a Lua number handed to redis.call costs a conversion to text (Redis 7.0 prints it with
-- "%.17g"), so numbers go as text where they can.
local function pickup(waitKey, activeKey, prioritizedKey, eventsKey, limiterKey, delayedKey,
    pausedKey, metaKey, pcKey, markerKey, prefix, token, lockDuration, now, limitMax,
    limitDuration, concurrency, settings, finished, answer)
  local paused, queueMax, queueDuration, queueConcurrency = false, nil, nil, nil
  for i = 1, #settings, 2 do
    local name = settings[i]
    if name == "paused" then
      paused = true
    elseif name == "max" then
      queueMax = tonumber(settings[i + 1])
    elseif name == "duration" then
      queueDuration = tonumber(settings[i + 1])
    elseif name == "concurrency" then
      queueConcurrency = tonumber(settings[i + 1])
    end
  end
  promoteDueJobs(delayedKey, waitKey, pausedKey, prioritizedKey, pcKey, markerKey, eventsKey,
    metaKey, prefix, now, paused)
  if paused then
    return { "", {}, 0 }
  end
  -- A rate limit the queue stores replaces the caller's; a concurrency it stores caps the
  -- caller's. Fields written by hand that do not read as numbers count as none.
  if queueMax and queueMax > 0 then
    limitMax, limitDuration = queueMax, queueDuration or 0
  end
  if queueConcurrency and queueConcurrency > 0
      and (concurrency == 0 or queueConcurrency < concurrency) then
    concurrency = queueConcurrency
  end
  if limitMax > 0 then
    local taken = tonumber(redis.call("GET", limiterKey)) or 0
    if taken >= limitMax then
      return { "", {}, math.max(redis.call("PTTL", limiterKey), 0) }
    end
  end
  if concurrency > 0 and redis.call("LLEN", activeKey) >= concurrency then
    return { "", {}, 0 }
  end
  -- The oldest waiting job moves to the head of active in one step; the oldest active job is
  -- therefore at the tail, where the finishing scripts' LREM starts.
  local jobId = redis.call("LMOVE", waitKey, activeKey, "RIGHT", "LEFT")
  if not jobId then
    jobId = redis.call("ZPOPMIN", prioritizedKey)[1]
    if jobId then
      redis.call("LPUSH", activeKey, jobId)
    end
  end
  if not jobId then
    refreshMarker(markerKey, waitKey, prioritizedKey, delayedKey, paused)
    return { "", {}, 0 }
  end
  if limitMax > 0 and redis.call("INCR", limiterKey) == 1 then
    redis.call("PEXPIRE", limiterKey, limitDuration)
  end
  local jobKey = prefix .. jobId
  redis.call("SET", jobKey .. ":lock", token, "PX", lockDuration)
  recordToken(prefix, token, jobId, finished, answer, lockDuration)
  redis.call("HSET", jobKey, "processedOn", now)
  emitUntrimmedEvent(eventsKey, "active", jobId, "prev", "waiting")
  -- A marker at 0 stays: more ready work, or at worst one idle worker woken for nothing (its
  -- pickup then refreshes the marker). A busy queue's pickup so reads the marker and no list.
  if redis.call("ZSCORE", markerKey, "next") ~= "0" then
    refreshMarker(markerKey, waitKey, prioritizedKey, delayedKey, paused)
  end
  return { jobId, redis.call("HGETALL", jobKey), 0 }
end
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait", "emq:{q}:7:lock"),
-- or nil when the key is not one of a queue's: job keys are built from it, so they carry the
-- queue's hash tag and land on its Cluster slot. The scripts that delete by the keys a runtime
-- passes check each against it.
local function queuePrefix(key)
  return string.match(key, "^(emq:{[^{}]*}:)")
end
-- A worker's lock token: any text but the empty one, which would name no pickup.
local function tokenArg(value)
  if value == "" then
    error("token must not be empty")
  end
  return value
end

local waitKey, activeKey, prioritizedKey, eventsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
-- KEYS[5], the stalled set, is not read (see its @key line).
local limiterKey, delayedKey, pausedKey, metaKey = KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local pcKey, markerKey = KEYS[10], KEYS[11]
local token = tokenArg(ARGV[1])
-- Both as the caller sent them: Redis reads them (see includes/pickup.lua).
local lockDuration, now = ARGV[2], ARGV[3]
digitsArg(lockDuration, "lock_duration", 1)
nowArg(now)
-- "0", the usual value, is read without a call (a call of intArg costs more than the rest of
-- the check, make bench).
local limitMax = ARGV[4] == "0" and 0 or intArg(ARGV[4], "limit_max", 0)
local limitDuration = ARGV[5] == "0" and 0 or intArg(ARGV[5], "limit_duration", 0)
local concurrency = ARGV[6] == "0" and 0 or intArg(ARGV[6], "concurrency", 0)

local prefix = queuePrefix(waitKey)
-- Re-sent with a token that still holds its job: that job again, and nothing else.
local held = heldJob(prefix, token)
if held then
  return { held, redis.call("HGETALL", prefix .. held), 0, token }
end
local picked = pickup(waitKey, activeKey, prioritizedKey, eventsKey, limiterKey, delayedKey,
  pausedKey, metaKey, pcKey, markerKey, prefix, token, lockDuration, now, limitMax,
  limitDuration, concurrency, redis.call("HGETALL", metaKey), nil, nil)
picked[4] = token
return picked
