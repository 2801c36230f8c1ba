--- Gives a job a new priority (0: none). A job waiting to run (in wait, paused or prioritized)
--- moves to where that priority puts it: prioritized, last of its priority, or with lifo first
--- of it; with none, wait (paused while the queue is paused), last in line, or with lifo next.
--- A job in any other state only has its hash's priority changed: it is read when the job next
--- becomes ready (a delayed job due, a retry, a parent released).
--- @key wait         `emq:{q}:wait`         the wait list
--- @key paused       `emq:{q}:paused`       the paused list
--- @key prioritized  `emq:{q}:prioritized`  the prioritized set
--- @key pc           `emq:{q}:pc`           the counter that orders jobs of one priority
--- @key meta         `emq:{q}:meta`         the queue's meta hash
--- @key marker       `emq:{q}:marker`       the marker idle workers block on
--- @arg job_id    id                 the job's id
--- @arg priority  int(0..2097151)    the new priority: 1 runs first, 0 is none
--- @arg lifo      bool = false       first of its priority (or next in wait) instead of last
--- @return int  0 when the priority was changed
--- @error -1 JobNotExist
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

local waitKey, pausedKey, prioritizedKey, pcKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local metaKey, markerKey = KEYS[5], KEYS[6]
local jobId, priority = ARGV[1], intArg(ARGV[2], "priority", 0, 2097151)
local lifo = ARGV[3] == "1"

checkJobId(jobId, "job id") -- the job's key is built from it
local jobKey = queuePrefix(waitKey) .. jobId
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end
local priorityText = string.format("%d", priority)
if priority > 0 then
  redis.call("HSET", jobKey, "priority", priorityText)
else
  redis.call("HDEL", jobKey, "priority") -- no field is no priority, as an add without one
end
local ready = redis.call("ZREM", prioritizedKey, jobId) == 1
  or redis.call("LREM", waitKey, "-1", jobId) == 1
  or redis.call("LREM", pausedKey, "-1", jobId) == 1
if not ready then
  return 0
end
local paused = redis.call("HEXISTS", metaKey, "paused") == 1
if priority == 0 and lifo then
  pushReady(waitKey, pausedKey, markerKey, paused, jobId, true)
elseif priority == 0 then
  pushReady(waitKey, pausedKey, markerKey, paused, jobId)
elseif lifo then
  pushPrioritizedFirst(prioritizedKey, markerKey, paused, jobId, priority)
else
  pushPrioritized(prioritizedKey, pcKey, markerKey, paused, jobId, priority)
end
return 0
