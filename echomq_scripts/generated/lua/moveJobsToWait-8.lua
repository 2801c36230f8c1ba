--- Makes jobs ready in bulk: finished jobs to run again, or delayed jobs promoted.
--- With `completed` or `failed`, the jobs of that set that finished at `timestamp` or before,
--- oldest first, each as reprocessJob sends one back (its attempts made kept); with `delayed`,
--- the delayed jobs due at `timestamp` or before, earliest first, each as promote promotes one
--- (BullMQ's promoteJobs). At most `count` a call. Answers whether more remain, so a caller calls
--- again until 0: one call stays short however many jobs there are.
--- @key source       `emq:{q}:<state>`      the set the jobs come from: completed, failed or delayed
--- @key wait         `emq:{q}:wait`         the wait list
--- @key paused       `emq:{q}:paused`       the paused list
--- @key prioritized  `emq:{q}:prioritized`  the prioritized set
--- @key pc           `emq:{q}:pc`           the counter that orders jobs of one priority
--- @key meta         `emq:{q}:meta`         the queue's meta hash
--- @key events       `emq:{q}:events`       the event stream
--- @key marker       `emq:{q}:marker`       the marker idle workers block on
--- @arg state      enum(completed|failed|delayed)  the set to take jobs from
--- @arg count      int(1..1000)                    the most jobs this call moves
--- @arg timestamp  int(0..)                        only jobs that finished (completed, failed)
---     or are due (delayed) at this time or before, ms
--- @return int  1 when more such jobs remain, 0 when none does
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait", "emq:{q}:7:lock"),
-- or nil when the key is not one of a queue's: job keys are built from it, so they carry the
-- queue's hash tag and land on its Cluster slot. The scripts that delete by the keys a runtime
-- passes check each against it.
local function queuePrefix(key)
  return string.match(key, "^(emq:{[^{}]*}:)")
end

-- Refuses, with a Lua error, keys that are not the queue's keys of the names given (`keys[i]`
-- must be `<prefix><names[i]>`, one prefix for all): the walks delete by the keys a runtime
-- passes, and a runtime that builds them itself must build them for one queue. Returns the
-- queue's prefix.
local function checkQueueKeys(keys, names)
  local prefix = queuePrefix(keys[1])
  for i, name in ipairs(names) do
    if not prefix or keys[i] ~= prefix .. name then
      error("key " .. keys[i] .. " is not the queue's " .. name .. " key")
    end
  end
  return prefix
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
-- An argument that must be one of the words given after `name`, as its header's enum(...) lists
-- them: enumArg(ARGV[1], "action", "pause", "resume"). Returns the value. The words are compared
-- one by one, without building a table of them: a call that passes costs a comparison or two.
local function enumArg(value, name, ...)
  local count = select("#", ...)
  for i = 1, count do
    if value == select(i, ...) then
      return value
    end
  end
  local words = "'" .. select(1, ...) .. "'"
  for i = 2, count do
    words = words .. (i == count and " or '" or ", '") .. select(i, ...) .. "'"
  end
  error(name .. " must be " .. words .. ", got '" .. tostring(value) .. "'")
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

-- Promotes a delayed job by hand (promote-8, and moveJobsToWait-8 for each one it takes): out
-- of the delayed set, to where pickup puts a due delayed job (includes/enqueueReadyJob.lua), its
-- hash's delay 0 as BullMQ's promote sets it (it waited no delay from now), with the event pickup
-- appends for it. Returns false when the delayed set does not hold the job, else true.
local function promoteJob(delayedKey, waitKey, pausedKey, prioritizedKey, pcKey, markerKey,
    eventsKey, metaKey, prefix, jobId, paused)
  if redis.call("ZREM", delayedKey, jobId) == 0 then
    return false
  end
  local state = enqueueReadyJob(waitKey, pausedKey, prioritizedKey, pcKey, markerKey, prefix, jobId,
    paused)
  redis.call("HSET", prefix .. jobId, "delay", "0")
  emitEvent(eventsKey, metaKey, state == "paused" and "paused" or "waiting", jobId,
    "prev", "delayed")
  return true
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

-- Sends a finished job (`outcome`: "completed" or "failed", the set `finishedKey` it is in) back
-- to run again: out of its set, without the fields of its finish (finishedOn, processedOn, and
-- returnvalue or failedReason; with `resetAttempts` its attempts made go back to 0), pending again
-- for a parent that recorded it, and where a ready job goes, with a "waiting" (or "paused")
-- event whose prev is the outcome. Returns the state it went to.
local function reprocessJob(finishedKey, waitKey, pausedKey, prioritizedKey, pcKey, markerKey,
    eventsKey, metaKey, prefix, jobId, outcome, resetAttempts, paused)
  local jobKey = prefix .. jobId
  redis.call("ZREM", finishedKey, jobId)
  redis.call("HDEL", jobKey, "finishedOn", "processedOn",
    outcome == "completed" and "returnvalue" or "failedReason")
  if resetAttempts then
    redis.call("HSET", jobKey, "atm", "0") -- every job hash has atm
  end
  -- A parent that still exists and recorded the child's finish waits for it again.
  local stored = redis.call("HMGET", jobKey, "parentKey", "opts")
  local parentKey = stored[1]
  if parentKey and redis.call("EXISTS", parentKey) == 1 then
    local recorded
    if outcome == "completed" then
      recorded = redis.call("HDEL", parentKey .. ":processed", jobKey) == 1
    else
      recorded = redis.call("ZREM", parentKey .. ":unsuccessful", jobKey) == 1
        or redis.call("HDEL", parentKey .. ":failed", jobKey) == 1
    end
    if recorded then
      redis.call("SADD", parentKey .. ":dependencies", jobKey)
    end
  end
  local state = enqueueReadyJob(waitKey, pausedKey, prioritizedKey, pcKey, markerKey, prefix, jobId,
    paused, lifoOption(stored[2]))
  emitEvent(eventsKey, metaKey, state == "paused" and "paused" or "waiting", jobId, "prev", outcome)
  return state
end

local sourceKey, waitKey, pausedKey, prioritizedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local pcKey, metaKey, eventsKey, markerKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local state = enumArg(ARGV[1], "state", "completed", "failed", "delayed")
local count, timestamp = intArg(ARGV[2], "count", 1, 1000), ARGV[3]
digitsArg(timestamp, "timestamp", 0) -- handed to Redis as the caller sent it

local prefix = checkQueueKeys({ sourceKey }, { state })
-- One more than a batch: whether any is left after it. Each set is scored by the time that
-- counts: a finished job's finish, a delayed job's run-at.
local due = redis.call("ZRANGEBYSCORE", sourceKey, "-inf", timestamp, "LIMIT", "0",
  string.format("%d", count + 1))
local paused = redis.call("HEXISTS", metaKey, "paused") == 1
for i = 1, math.min(#due, count) do
  if state == "delayed" then
    promoteJob(sourceKey, waitKey, pausedKey, prioritizedKey, pcKey, markerKey, eventsKey,
      metaKey, prefix, due[i], paused)
  else
    reprocessJob(sourceKey, waitKey, pausedKey, prioritizedKey, pcKey, markerKey, eventsKey,
      metaKey, prefix, due[i], state, false, paused)
  end
end
return #due > count and 1 or 0
