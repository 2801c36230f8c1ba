--- Runs a finished job again: a completed or failed job goes back where a ready job goes
--- (prioritized with a priority, else wait, or paused while the queue is paused: last in line,
--- or with opts.lifo next), without its finish (finishedOn, processedOn, and returnvalue or
--- failedReason), its attempts made kept or, with reset_attempts, back to 0. A parent that
--- recorded its finish waits for it again. A job in completed or failed holds no lock: every
--- finish deletes it.
--- @key finished     `emq:{q}:<outcome>`    the completed or the failed set
--- @key wait         `emq:{q}:wait`         the wait list
--- @key paused       `emq:{q}:paused`       the paused list
--- @key prioritized  `emq:{q}:prioritized`  the prioritized set
--- @key pc           `emq:{q}:pc`           the counter that orders jobs of one priority
--- @key meta         `emq:{q}:meta`         the queue's meta hash
--- @key events       `emq:{q}:events`       the event stream
--- @key marker       `emq:{q}:marker`       the marker idle workers block on
--- @arg job_id          id                      the job's id
--- @arg outcome         enum(completed|failed)  the set the job must be in
--- @arg reset_attempts  bool = false            set its attempts made back to 0
--- @return string  where the job went: "wait", "paused" or "prioritized"
--- @error -1 JobNotExist
--- @error -3 JobNotInState
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

local finishedKey, waitKey, pausedKey, prioritizedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local pcKey, metaKey, eventsKey, markerKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local jobId, outcome = ARGV[1], enumArg(ARGV[2], "outcome", "completed", "failed")
local resetAttempts = ARGV[3] == "1"

checkJobId(jobId, "job id") -- the job's key is built from it
local prefix = checkQueueKeys({ finishedKey }, { outcome })
if redis.call("EXISTS", prefix .. jobId) == 0 then
  return -1
end
if not redis.call("ZSCORE", finishedKey, jobId) then
  return -3
end
return reprocessJob(finishedKey, waitKey, pausedKey, prioritizedKey, pcKey, markerKey, eventsKey,
  metaKey, prefix, jobId, outcome, resetAttempts, redis.call("HEXISTS", metaKey, "paused") == 1)
