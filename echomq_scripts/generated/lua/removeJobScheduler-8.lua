--- Removes a job scheduler, with its iteration not yet picked up (a `removed` event); one
--- picked up, or back for a retry, runs on as a job of its own.
--- @key schedulers   `emq:{q}:repeat`                 the job schedulers, scored by next run
--- @key scheduler    `emq:{q}:repeat:<scheduler_id>`  the scheduler's settings
--- @key wait         `emq:{q}:wait`                   the wait list
--- @key paused       `emq:{q}:paused`                 the paused list
--- @key delayed      `emq:{q}:delayed`                the delayed set
--- @key prioritized  `emq:{q}:prioritized`            the prioritized set
--- @key events       `emq:{q}:events`                 the event stream
--- @key meta         `emq:{q}:meta`                   the queue's meta hash
--- @arg scheduler_id  id  the scheduler's id
--- @return int  1 when the scheduler was removed, 0 when there was none
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
-- The id of a job scheduler's iteration due at `millis` (a number, or a sorted set's score as
-- Redis gives it): "repeat-<scheduler id>-<millis>". The id rule bars ":", so the parts are
-- joined with "-"; the last "-" starts the millis, which are digits, so the id names one
-- scheduler and one time.
local function schedulerJobId(schedulerId, millis)
  return "repeat-" .. schedulerId .. "-" .. string.format("%d", tonumber(millis))
end

local schedulersKey, schedulerKey, waitKey, pausedKey, delayedKey = KEYS[1], KEYS[2], KEYS[3],
  KEYS[4], KEYS[5]
local prioritizedKey, eventsKey, metaKey = KEYS[6], KEYS[7], KEYS[8]
local schedulerId = ARGV[1]

checkSchedulerKeys(schedulersKey, schedulerKey, schedulerId)
local current = redis.call("ZSCORE", schedulersKey, schedulerId)
if not current then
  return 0
end
local prefix = queuePrefix(schedulersKey)
local jobId = schedulerJobId(schedulerId, current)
local stateKey, state = pendingIteration(prefix, schedulerId, jobId,
  { delayedKey, prioritizedKey, waitKey, pausedKey })
if state then
  removePendingIteration(prefix, jobId, stateKey, state, eventsKey, metaKey)
end
redis.call("ZREM", schedulersKey, schedulerId)
redis.call("DEL", schedulerKey)
return 1
