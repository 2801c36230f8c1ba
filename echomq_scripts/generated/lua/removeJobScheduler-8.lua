--- Removes a job scheduler, with its iteration not yet picked up (a `removed` event); one
--- picked up runs on, as a job of its own.
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
-- Appends an event to the queue's stream, trimmed to about the length the queue's meta hash
-- sets in "max-events" (10000 when unset).
local function emitEvent(eventsKey, metaKey, event, jobId, ...)
  local maxEvents = tonumber(redis.call("HGET", metaKey, "max-events")) or 10000
  redis.call("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", event, "jobId", jobId, ...)
end
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait"): job keys are built
-- from it, so they carry the queue's hash tag and land on its Cluster slot.
local function queuePrefix(key)
  return string.match(key, "^(.*:)[^:]*$")
end
-- Deletes a job's hash and its companion keys: its lock, and a parent's :dependencies,
-- :processed, :failed (ignored children) and :unsuccessful (failed children).
local function removeJobKeys(prefix, jobId)
  local jobKey = prefix .. jobId
  redis.call("DEL", jobKey, jobKey .. ":lock", jobKey .. ":dependencies", jobKey .. ":processed",
    jobKey .. ":failed", jobKey .. ":unsuccessful")
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
local jobId = schedulerJobId(schedulerId, current)
local prev = nil
if redis.call("ZREM", delayedKey, jobId) == 1 then
  prev = "delayed"
elseif redis.call("ZREM", prioritizedKey, jobId) == 1 then
  prev = "prioritized"
elseif redis.call("LREM", waitKey, 0, jobId) > 0 then
  prev = "wait"
elseif redis.call("LREM", pausedKey, 0, jobId) > 0 then
  prev = "paused"
end
if prev then
  removeJobKeys(queuePrefix(schedulersKey), jobId)
  emitEvent(eventsKey, metaKey, "removed", jobId, "prev", prev)
end
redis.call("ZREM", schedulersKey, schedulerId)
redis.call("DEL", schedulerKey)
return 1
