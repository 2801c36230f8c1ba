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
-- Where a job scheduler's iteration `jobId` waits to run for the first time: the key and the name
-- of the state that holds it, or nil when it is not waiting, or has run already (it has
-- processedOn: picked up, then back for a retry). `places` are the queue's delayed, prioritized,
-- wait and paused keys, in that order. Only a pending iteration is replaced, or removed with its
-- scheduler; one that ran is a job's own.
local function pendingIteration(prefix, jobId, places)
  if redis.call("HEXISTS", prefix .. jobId, "processedOn") == 1 then
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
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait"): job keys are built
-- from it, so they carry the queue's hash tag and land on its Cluster slot.
local function queuePrefix(key)
  return string.match(key, "^(.*:)[^:]*$")
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
-- Deletes a job's hash and its companion keys: its lock, and a parent's :dependencies,
-- :processed, :failed (ignored children) and :unsuccessful (failed children).
local function removeJobKeys(prefix, jobId)
  local jobKey = prefix .. jobId
  redis.call("DEL", jobKey, jobKey .. ":lock", jobKey .. ":dependencies", jobKey .. ":processed",
    jobKey .. ":failed", jobKey .. ":unsuccessful")
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

local current = redis.call("ZSCORE", schedulersKey, schedulerId)
if not current then
  return 0
end
local prefix = queuePrefix(schedulersKey)
local jobId = schedulerJobId(schedulerId, current)
local stateKey, state = pendingIteration(prefix, jobId,
  { delayedKey, prioritizedKey, waitKey, pausedKey })
if state then
  removePendingIteration(prefix, jobId, stateKey, state, eventsKey, metaKey)
end
redis.call("ZREM", schedulersKey, schedulerId)
redis.call("DEL", schedulerKey)
return 1
