--- Creates or updates a job scheduler, and schedules its next iteration: exactly one job.
--- A scheduler runs `every` ms (from start_date, or keeping an offset within each period) or on
--- a cron pattern, whose next run the caller computes (next_millis: time comes in ARGV), up to a
--- limit of iterations and an end date. Its iterations are jobs from its template, with the ids
--- "repeat-<scheduler_id>-<run at>". Upserted again with the same settings, it changes nothing.
--- With new settings, an iteration not yet picked up is replaced (an every scheduler whose
--- period is unchanged keeps its time); one picked up runs on.
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
--- @arg scheduler_id  id                 the scheduler's id
--- @arg now           int(0..) = @now    the caller's clock, in milliseconds
--- @arg every         int(0..)           the period in ms, or 0 for a pattern
--- @arg pattern       string             a cron pattern, or "" for every
--- @arg tz            string = ""        the pattern's time zone (the caller reads it), or ""
--- @arg next_millis   int(0..) = 0       a pattern's next run, as the caller computed it (0 for
---     every)
--- @arg limit         int(0..) = 0       the most iterations to run, or 0 for no limit
--- @arg start_date    int(0..) = 0       no run before this time (ms), or 0
--- @arg end_date      int(0..) = 0       no run after this time (ms), or 0
--- @arg offset        int(0..) = 0       every: the runs' place within each period (ms), or 0
--- @arg name          string             the iterations' name
--- @arg data          json               the iterations' data: any JSON value
--- @arg opts          json(object) = {}  the iterations' options
--- @arg priority      int(0..2097151) = 0  the iterations' priority, or 0
--- @return tuple[string, int]  the pending iteration's id ("" once the limit or the end date is
---     reached), and when it runs
--- @error -10 SchedulerJobIdCollision
--- @error -11 SchedulerJobSlotsBusy
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

-- Refuses what a job may not be added with, before anything is written: an id that would make
-- its keys another's, options that are not a JSON object, two failure policies, or
-- deduplication options that do not fit. `customId` ("" for a generated id), `opts` (JSON),
-- `now` and `dedupId` ("" for none) as the add took them. Returns the deduplication options
-- (opts.deduplication, read: `ttl` in ms or nil, and `extend`, `replace`, `keepLastIfActive`,
-- each set by JSON true), or nil when the job has none.
local function checkJobArgs(customId, opts, now, dedupId)
  nowArg(now) -- stored, and added to sets, as the caller sent it
  if customId ~= "" then
    checkJobId(customId, "job id")
  end
  -- An object, not an array: cjson reads both as tables, so the text says which it is. The
  -- empty object, the common case, needs no decoding.
  if opts == "{}" then
    return nil
  end
  local ok, decoded = pcall(cjson.decode, opts)
  if not ok or type(decoded) ~= "table" or not string.match(opts, "^%s*{") then
    error("opts must be a JSON object")
  end
  -- A child has one policy for its parent: with two, which one holds would be a guess.
  local policies = 0
  for _, policy in ipairs({ "failParentOnFailure", "ignoreDependencyOnFailure",
      "removeDependencyOnFailure", "continueParentOnFailure" }) do
    if decoded[policy] == true then
      policies = policies + 1
    end
  end
  if policies > 1 then
    error("opts may set only one of failParentOnFailure, ignoreDependencyOnFailure, "
      .. "removeDependencyOnFailure and continueParentOnFailure")
  end
  local dedup = decoded.deduplication
  if dedup == nil or dedup == cjson.null then
    return nil
  end
  -- The id is the dedup_id argument alone; options without it would be ignored unseen.
  if type(dedup) ~= "table" then
    error("opts.deduplication must be an object")
  end
  if dedupId == "" then
    error("opts.deduplication needs a dedup_id")
  end
  if dedup.id ~= nil and dedup.id ~= dedupId then
    error("opts.deduplication.id must be the dedup_id, '" .. dedupId .. "', or absent")
  end
  local ttl = dedup.ttl
  if ttl == cjson.null or ttl == 0 then
    ttl = nil
  elseif type(ttl) == "number" then
    ttl = intArg(ttl, "opts.deduplication.ttl", 1)
  elseif ttl ~= nil then
    error("opts.deduplication.ttl must be a number of milliseconds, got " .. cjson.encode(ttl))
  end
  return {
    ttl = ttl, extend = dedup.extend == true, replace = dedup.replace == true,
    keepLastIfActive = dedup.keepLastIfActive == true,
  }
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
-- Deletes a job's hash and its companion keys: its lock, its logs, and a parent's :dependencies,
-- :processed, :failed (ignored children) and :unsuccessful (failed children).
local function removeJobKeys(prefix, jobId)
  local jobKey = prefix .. jobId
  redis.call("DEL", jobKey, jobKey .. ":lock", jobKey .. ":logs", jobKey .. ":dependencies",
    jobKey .. ":processed", jobKey .. ":failed", jobKey .. ":unsuccessful")
end

-- Removes a job scheduler's pending iteration `jobId` from `stateKey` (the state `state` that
-- pendingIteration found), with its keys, and appends `removed`. An iteration has no parent: it
-- joins no flow (addFlow-10 answers -8).
local function removePendingIteration(prefix, jobId, stateKey, state, eventsKey, metaKey)
  if state == "wait" or state == "paused" then
    redis.call("LREM", stateKey, 0, jobId)
  else
    redis.call("ZREM", stateKey, jobId)
  end
  removeJobKeys(prefix, jobId)
  emitEvent(eventsKey, metaKey, "removed", jobId, "prev", state)
end

local schedulersKey, schedulerKey, waitKey, pausedKey, delayedKey = KEYS[1], KEYS[2], KEYS[3],
  KEYS[4], KEYS[5]
local prioritizedKey, pcKey, metaKey, eventsKey, markerKey = KEYS[6], KEYS[7], KEYS[8], KEYS[9],
  KEYS[10]
local schedulerId, now, pattern, tz = ARGV[1], ARGV[2], ARGV[4], ARGV[5]
-- The settings are stored as the caller sent them, decimal digits: a Lua number handed to Redis
-- is printed again, which costs more than the check.
local every = digitsArg(ARGV[3], "every", 0)
local nextMillis = digitsArg(ARGV[6], "next_millis", 0)
local limit = digitsArg(ARGV[7], "limit", 0)
local startDate = digitsArg(ARGV[8], "start_date", 0)
local endDate = digitsArg(ARGV[9], "end_date", 0)
local offset = digitsArg(ARGV[10], "offset", 0)
local name, data, opts = ARGV[11], ARGV[12], ARGV[13]
local priority = digitsArg(ARGV[14], "priority", 0, 2097151)

-- 1. The settings, refused before anything is written.
checkSchedulerKeys(schedulersKey, schedulerKey, schedulerId)
-- The template's options as an add's: a scheduler's iterations take no deduplication id.
checkJobArgs("", opts, now, "")
local nowMillis = tonumber(now)
if (every > 0) == (pattern ~= "") then
  error("a job scheduler runs either every N ms or on a pattern: give one of every and pattern")
end
if pattern ~= "" and nextMillis == 0 then
  error("a pattern scheduler needs next_millis, its next run as the caller computed it")
end
if every > 0 and offset >= every then
  error("offset must be less than every, got " .. offset .. " and " .. every)
end
-- The settings' texts. A setting at the value that stands for none ("{}", "", "0") is not stored
-- (a hash of fewer fields costs the server less to write), and reads as it. Each is named below
-- rather than walked in a table of settings: tables built on every call cost the server more.
local priorityText, everyText, limitText, startText, endText = ARGV[14], ARGV[3], ARGV[7],
  ARGV[8], ARGV[9]

-- 2. What there is: the scheduler's settings and its current iteration. The same settings
-- change nothing while that iteration lives (waits, or runs: its worker schedules the next);
-- one that is gone, or finished without a next, is followed by a new one.
local prefix = queuePrefix(schedulersKey)
local previous = redis.call("ZSCORE", schedulersKey, schedulerId)
local stored = {}
local currentId, pendingKey, pendingState = nil, nil, nil
if previous then
  previous = tonumber(previous)
  currentId = schedulerJobId(schedulerId, previous)
  local flat = redis.call("HGETALL", schedulerKey)
  for i = 1, #flat, 2 do
    stored[flat[i]] = flat[i + 1]
  end
  -- The offset given, or none: the one stored was found from the first run.
  local same = stored.name == name and (stored.data or "{}") == data
    and (stored.opts or "{}") == opts and (stored.priority or "0") == priorityText
    and (stored.every or "0") == everyText and (stored.pattern or "") == pattern
    and (stored.tz or "") == tz and (stored.limit or "0") == limitText
    and (stored.startDate or "0") == startText and (stored.endDate or "0") == endText
    and (offset == 0 or (tonumber(stored.offset) or 0) == offset)
  local live = redis.call("HGET", prefix .. currentId, "rjk") == schedulerId
    and not redis.call("ZSCORE", prefix .. "completed", currentId)
    and not redis.call("ZSCORE", prefix .. "failed", currentId)
  if same and live then
    return { currentId, previous }
  end
  pendingKey, pendingState = pendingIteration(prefix, schedulerId, currentId,
    { delayedKey, prioritizedKey, waitKey, pausedKey })
end

-- 3. The next run, and its slot: an iteration's id is its time, so a job that holds the id (an
-- earlier run kept by its retention, or the current one running) takes the slot. An every
-- scheduler tries the slots after it, a pattern's is refused. An every scheduler whose period,
-- offset and start are unchanged keeps its time: the pending iteration's, or the next after the
-- current one.
local runAt = nextMillis
if every > 0 then
  if previous and tonumber(stored.every) == every
      and (tonumber(stored.startDate) or 0) == startDate
      and (offset == 0 or (tonumber(stored.offset) or 0) == offset) then
    offset = tonumber(stored.offset) or offset
    runAt = pendingState and previous or everyNextRun(previous, every, nowMillis, offset, 0)
  else
    runAt, offset = everyNextRun(nil, every, nowMillis, offset, startDate)
  end
end
local iterations = tonumber(stored.ic) or 0
if pendingState then
  iterations = iterations - 1 -- the one replaced does not count
end
local ended = (limit > 0 and iterations >= limit) or (endDate > 0 and runAt > endDate)
-- A slot is taken by a job that holds its id, but for the iteration being replaced, which frees
-- it; one that runs on holds it, as any job does. An every scheduler tries 32 slots after its
-- own.
local scanned = 0
while not ended do
  local id = schedulerJobId(schedulerId, runAt)
  if (pendingState and id == currentId) or redis.call("EXISTS", prefix .. id) == 0 then
    break
  end
  if every == 0 then
    return -10
  end
  if scanned == 32 then
    return -11
  end
  runAt, scanned = runAt + every, scanned + 1
  ended = endDate > 0 and runAt > endDate
end

-- 4. The writes: the iteration replaced goes, the settings are stored, and the next one added.
if pendingState then
  removePendingIteration(prefix, currentId, pendingKey, pendingState, eventsKey, metaKey)
end
local jobId = ""
if not ended then
  jobId = addSchedulerJob({ waitKey, pausedKey, delayedKey, prioritizedKey, pcKey, markerKey,
    eventsKey, metaKey }, prefix, schedulerId, runAt, now, name, data, opts, priority,
    redis.call("HEXISTS", metaKey, "paused") == 1)
  iterations = iterations + 1
elseif previous then
  runAt = previous -- nothing more runs: the scheduler keeps the time of its current iteration
end
if previous then
  redis.call("DEL", schedulerKey) -- fields a setting no longer has go with the old ones
end
local fields = { "name", name, "ic", string.format("%d", iterations) }
local function keep(field, text, none)
  if text ~= none then
    fields[#fields + 1], fields[#fields + 2] = field, text
  end
end
keep("offset", string.format("%d", offset), "0")
keep("data", data, "{}")
keep("opts", opts, "{}")
keep("priority", priorityText, "0")
keep("every", everyText, "0")
keep("pattern", pattern, "")
keep("tz", tz, "")
keep("limit", limitText, "0")
keep("startDate", startText, "0")
keep("endDate", endText, "0")
redis.call("HSET", schedulerKey, unpack(fields))
redis.call("ZADD", schedulersKey, string.format("%d", runAt), schedulerId)
return { jobId, runAt }
