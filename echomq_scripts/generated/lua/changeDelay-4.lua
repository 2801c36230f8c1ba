--- Gives a delayed job a new delay, counted from now: it becomes due at now + delay, its hash's
--- delay is the new one, and idle workers are woken for then.
--- @key delayed  `emq:{q}:delayed`  the delayed set, scored by run-at
--- @key meta     `emq:{q}:meta`     the queue's meta hash
--- @key events   `emq:{q}:events`   the event stream
--- @key marker   `emq:{q}:marker`   the marker idle workers block on
--- @arg job_id  id        the job's id
--- @arg delay   int(0..)  milliseconds from now until the job is due
--- @arg now     int(0..) = @now  the caller's clock, in milliseconds
--- @return int  0 when the delay was changed
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
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait", "emq:{q}:7:lock"),
-- or nil when the key is not one of a queue's: job keys are built from it, so they carry the
-- queue's hash tag and land on its Cluster slot. The scripts that delete by the keys a runtime
-- passes check each against it.
local function queuePrefix(key)
  return string.match(key, "^(emq:{[^{}]*}:)")
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

-- When a job delayed `delay` ms (a checked integer, named `name` in the error) from `now` (the
-- caller's clock, as sent) becomes due. Refused past 2^53 - 1: beyond it a Lua number, and a
-- sorted set's score, no longer holds every integer, so the job would be due at another time
-- than the one asked for. The sum of two numbers up to 2^53 - 1 that is over it rounds to a
-- number over it too, so the comparison is exact.
local function runAtArg(now, delay, name)
  local runAt = nowArg(now) + delay
  if runAt > 9007199254740991 then
    error(name .. " must end by 2^53 - 1 ms, got now " .. now .. " + " .. name .. " "
      .. string.format("%d", delay))
  end
  return runAt
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

local delayedKey, metaKey, eventsKey, markerKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local jobId, delay, now = ARGV[1], intArg(ARGV[2], "delay", 0), ARGV[3]

local runAt = runAtArg(now, delay, "delay")
checkJobId(jobId, "job id") -- the job's key is built from it
local jobKey = queuePrefix(delayedKey) .. jobId
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end
if not redis.call("ZSCORE", delayedKey, jobId) then
  return -3
end
local delayText, runAtText = string.format("%d", delay), string.format("%d", runAt)
redis.call("HSET", jobKey, "delay", delayText)
redis.call("ZADD", delayedKey, runAtText, jobId)
signalWork(markerKey, runAt)
emitEvent(eventsKey, metaKey, "delayed", jobId, "delay", delayText, "runAt", runAtText)
return 0
