--- Schedules a job scheduler's next iteration once its current one was picked up: the worker
--- that picked it calls this with the job's id, and only the current iteration moves the
--- scheduler on, so workers that race, or a call sent twice, schedule one job; one still
--- waiting to be picked up moves nothing. An every
--- scheduler's next run is a period after the current one (or the next slot after now, when
--- runs were missed); a pattern's is next_millis, as the caller computed it. Nothing runs past
--- the limit or the end date.
--- @key schedulers   `emq:{q}:repeat`                 the job schedulers, scored by next run
--- @key scheduler    `emq:{q}:repeat:<scheduler_id>`  the scheduler's settings
--- @key wait         `emq:{q}:wait`                   the wait list
--- @key paused       `emq:{q}:paused`                 the paused list
--- @key delayed      `emq:{q}:delayed`                the delayed set
--- @key prioritized  `emq:{q}:prioritized`            the prioritized set
--- @key pc           `emq:{q}:pc`                     the counter that orders jobs of one priority
--- @key meta         `emq:{q}:meta`                   the queue's meta hash
--- @key events       `emq:{q}:events`                 the event stream
--- @key marker       `emq:{q}:marker`                 the marker idle workers block on
--- @arg scheduler_id  id        the scheduler's id (the picked job's "rjk")
--- @arg job_id        id        the iteration picked up
--- @arg now           int(0..) = @now  the caller's clock, in milliseconds
--- @arg next_millis   int(0..)  a pattern's next run after the current one, as the caller
---     computed it (0 for every)
--- @return string  the next iteration's id, or "" when none was added: the job is not the
---     current iteration (already moved on, or the scheduler removed), the limit or the end date
---     is reached, or the slot is taken (a `duplicated` event)
-- Writes a new job's hash, with `extraFields` (the script's own fields), and takes its
-- deduplication id (`dedupId`, "" for none) with `dedupKeyArgs`, what SET takes after the value
-- (a TTL, KEEPTTL, or nothing). A generated id skips the numbers custom ids took, and those in
-- `reserved` (a flow's custom ids, not written yet; nil for none). Returns the id.
local function createJob(idKey, prefix, customId, name, data, opts, now, dedupId, dedupKeyArgs,
    extraFields, reserved)
  local jobId = customId
  if jobId == "" then
    repeat
      -- "%d": tostring prints a Lua number as a float, which costs the server more.
      jobId = string.format("%d", redis.call("INCR", idKey))
    until redis.call("EXISTS", prefix .. jobId) == 0 and not (reserved and reserved[jobId])
  end
  local fields = {
    "name", name, "data", data, "opts", opts, "timestamp", now, "atm", "0", "stc", "0",
  }
  if dedupId ~= "" then
    redis.call("SET", prefix .. "de:" .. dedupId, jobId, unpack(dedupKeyArgs))
    fields[#fields + 1] = "deid"
    fields[#fields + 1] = dedupId
  end
  for _, value in ipairs(extraFields) do
    fields[#fields + 1] = value
  end
  redis.call("HSET", prefix .. jobId, unpack(fields))
  return jobId
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

-- Puts a job just created where an add puts it, with the add's event: to delayed when it is due
-- at `runAt` (nil for now; `delay` the ms it was given), workers woken for then, else to
-- prioritized with a `priority`, else to wait, or paused while the queue is `paused`: at the
-- head, or where workers take next when its options (`opts`, JSON) set lifo. `keys` are the
-- queue's wait, paused, delayed, prioritized, pc, marker, events and meta keys, in that order.
local function enqueueNewJob(keys, jobId, name, delay, runAt, priority, paused, opts)
  local markerKey, eventsKey, metaKey = keys[6], keys[7], keys[8]
  if runAt then
    redis.call("ZADD", keys[3], runAt, jobId)
    signalWork(markerKey, runAt)
    emitEvent(eventsKey, metaKey, "delayed", jobId, "delay", delay, "runAt", runAt)
  elseif priority > 0 then
    pushPrioritized(keys[4], keys[5], markerKey, paused, jobId, priority)
    emitEvent(eventsKey, metaKey, "prioritized", jobId, "priority", priority)
  else
    local state = pushReady(keys[1], keys[2], markerKey, paused, jobId, lifoOption(opts))
    emitEvent(eventsKey, metaKey, state == "paused" and "paused" or "waiting", jobId, "name", name)
  end
end
-- The id of a job scheduler's iteration due at `millis` (a number, or a sorted set's score as
-- Redis gives it): "repeat-<scheduler id>-<millis>". The id rule bars ":", so the parts are
-- joined with "-"; the last "-" starts the millis, which are digits, so the id names one
-- scheduler and one time.
local function schedulerJobId(schedulerId, millis)
  return "repeat-" .. schedulerId .. "-" .. string.format("%d", tonumber(millis))
end

-- Adds the iteration of job scheduler `schedulerId` due at `runAt` (ms), from its template
-- (`name`, `data`, `opts`, `priority`), created at `now` (the caller's text): a job whose
-- "rjk" names the scheduler, to delayed when it is due later, else where a ready job goes.
-- `keys` are enqueueNewJob's. Returns its id.
local function addSchedulerJob(keys, prefix, schedulerId, runAt, now, name, data, opts, priority,
    paused)
  local jobId = schedulerJobId(schedulerId, runAt)
  local delay = math.max(runAt - tonumber(now), 0)
  local fields = { "rjk", schedulerId }
  if delay > 0 then
    fields[#fields + 1], fields[#fields + 2] = "delay", delay
  end
  if priority > 0 then
    fields[#fields + 1], fields[#fields + 2] = "priority", priority
  end
  createJob(prefix .. "id", prefix, jobId, name, data, opts, now, "", {}, fields, nil)
  enqueueNewJob(keys, jobId, name, delay, delay > 0 and runAt or nil, priority, paused, opts)
  return jobId
end
-- The rule for job ids, the same as echomq_scripts/keys.py's (the tests hold the two together). An
-- id becomes part of key names (emq:{q}:<id>, emq:{q}:<id>:lock, ...), so it may not hold ":"
-- (job "7:lock" would be job 7's lock) or a brace (the key's hash tag stays the queue's), and it
-- may not be the name of one of the queue's own keys (job "wait" would make emq:{q}:wait a hash).
-- No reserved name holds a space, so a space ends the search's words.
local RESERVED_JOB_IDS = " wait paused active delayed prioritized completed failed waiting-children stalled events meta id pc limiter marker metrics de dn token repeat "

-- Refuses a custom id that breaks the rule, naming it: `what` is "job id" or "parent id".
local function checkJobId(jobId, what)
  if string.find(jobId, "[{}:]") then
    error(what .. " '" .. jobId .. "' contains '{', '}' or ':', which would make its keys another's")
  end
  if not string.find(jobId, " ", 1, true)
      and string.find(RESERVED_JOB_IDS, " " .. jobId .. " ", 1, true) then
    error(what .. " '" .. jobId .. "' is the name of one of the queue's own keys")
  end
end

-- Refuses a scheduler id that breaks the id rule, and keys that are not its: `schedulersKey` must
-- be a queue's `emq:{q}:repeat` and `schedulerKey` `emq:{q}:repeat:<schedulerId>`. A runtime
-- that builds the keys itself must build them for this id; the scripts write and delete by them.
local function checkSchedulerKeys(schedulersKey, schedulerKey, schedulerId)
  if schedulerId == "" then
    error("scheduler id must not be empty")
  end
  checkJobId(schedulerId, "scheduler id")
  -- One find of the whole key, not queuePrefix's capture and a concatenation: an upsert pays
  -- this on every call, and the capture cost it 2.5k instructions more (make bench).
  if not string.find(schedulersKey, "^emq:{[^{}]*}:repeat$")
      or schedulerKey ~= schedulersKey .. ":" .. schedulerId then
    error("keys " .. schedulersKey .. " and " .. schedulerKey .. " are not the keys of scheduler '"
      .. schedulerId .. "'")
  end
end
-- When an `every` scheduler runs next, in ms, and its offset: the place of its runs within each
-- period of `every` ms. `previous` is the run before (nil for the first): the next is `every`
-- after it, or, when that is already past at `now` (runs were missed), the first slot after
-- `now` that keeps the offset. The first run is at `startDate` when that is later than `now`,
-- else at the next slot that keeps a given offset, else at `now`. An offset of 0 is taken from
-- the run found, so that later runs keep its place.
local function everyNextRun(previous, every, now, offset, startDate)
  local nextRun
  if previous then
    nextRun = previous + every
    if nextRun < now then
      nextRun = math.floor(now / every) * every + offset
      if nextRun <= now then
        nextRun = nextRun + every
      end
    end
  elseif startDate > 0 then
    nextRun = math.max(startDate, now)
  elseif offset > 0 then
    nextRun = math.floor(now / every) * every + offset
    if nextRun <= now then
      nextRun = nextRun + every
    end
  else
    nextRun = now
  end
  if offset == 0 then
    offset = nextRun - math.floor(nextRun / every) * every
  end
  return nextRun, offset
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
-- Where job scheduler `schedulerId`'s iteration `jobId` waits to run for the first time: the key
-- and the name of the state that holds it, or nil when it is not waiting, has run already (it
-- has processedOn: picked up, then back for a retry), or is not that scheduler's (no such job, or
-- a job of its own that took the id). `places` are the queue's delayed, prioritized, wait and
-- paused keys, in that order. Only a pending iteration is replaced, or removed with its
-- scheduler; one that ran is a job's own.
local function pendingIteration(prefix, schedulerId, jobId, places)
  local stored = redis.call("HMGET", prefix .. jobId, "rjk", "processedOn")
  if stored[1] ~= schedulerId or stored[2] then
    return nil
  end
  local names = { "delayed", "prioritized", "wait", "paused" }
  for i = 1, 2 do
    if redis.call("ZSCORE", places[i], jobId) then
      return places[i], names[i]
    end
  end
  for i = 3, 4 do
    if redis.call("LPOS", places[i], jobId) then
      return places[i], names[i]
    end
  end
  return nil
end
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait", "emq:{q}:7:lock"),
-- or nil when the key is not one of a queue's: job keys are built from it, so they carry the
-- queue's hash tag and land on its Cluster slot. The scripts that delete by the keys a runtime
-- passes check each against it.
local function queuePrefix(key)
  return string.match(key, "^(emq:{[^{}]*}:)")
end

local schedulersKey, schedulerKey, waitKey, pausedKey, delayedKey = KEYS[1], KEYS[2], KEYS[3],
  KEYS[4], KEYS[5]
local prioritizedKey, pcKey, metaKey, eventsKey, markerKey = KEYS[6], KEYS[7], KEYS[8], KEYS[9],
  KEYS[10]
local schedulerId, jobId, now = ARGV[1], ARGV[2], ARGV[3]
local nowMillis = nowArg(now)
local nextMillis = intArg(ARGV[4], "next_millis", 0)

checkSchedulerKeys(schedulersKey, schedulerKey, schedulerId)
local prefix = queuePrefix(schedulersKey)
local current = redis.call("ZSCORE", schedulersKey, schedulerId)
-- Only the current iteration, once picked up, moves the scheduler on: not one still waiting,
-- nor a job of its own that took the id.
if not current or schedulerJobId(schedulerId, current) ~= jobId
    or redis.call("HGET", prefix .. jobId, "rjk") ~= schedulerId
    or pendingIteration(prefix, schedulerId, jobId,
      { delayedKey, prioritizedKey, waitKey, pausedKey }) then
  return ""
end
current = tonumber(current)
local stored = redis.call("HMGET", schedulerKey, "every", "offset", "limit", "endDate", "ic",
  "name", "data", "opts", "priority")
local every, offset = tonumber(stored[1]) or 0, tonumber(stored[2]) or 0
local limit, endDate, iterations = tonumber(stored[3]) or 0, tonumber(stored[4]) or 0,
  tonumber(stored[5]) or 0
local runAt = nextMillis
if every > 0 then
  runAt = everyNextRun(current, every, nowMillis, offset, 0)
elseif runAt <= current then
  error("next_millis must be after the current iteration's run at " .. string.format("%d", current)
    .. ", got " .. ARGV[4])
end
if (limit > 0 and iterations >= limit) or (endDate > 0 and runAt > endDate) then
  return ""
end
local nextId = schedulerJobId(schedulerId, runAt)
if redis.call("EXISTS", prefix .. nextId) == 1 then
  emitEvent(eventsKey, metaKey, "duplicated", nextId)
  return ""
end
addSchedulerJob({ waitKey, pausedKey, delayedKey, prioritizedKey, pcKey, markerKey, eventsKey,
  metaKey }, prefix, schedulerId, runAt, now, stored[6], stored[7] or "{}", stored[8] or "{}",
  tonumber(stored[9]) or 0, redis.call("HEXISTS", metaKey, "paused") == 1)
redis.call("HSET", schedulerKey, "ic", string.format("%d", iterations + 1))
redis.call("ZADD", schedulersKey, string.format("%d", runAt), schedulerId)
return nextId
