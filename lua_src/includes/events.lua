-- Appends an event to the queue's stream, trimmed to about the length the queue's meta hash
-- sets in "max-events" (10000 when unset).
-- The limit is read once per script run: every key of one run belongs to one queue, and a run
-- cannot see another client's write, so later events of the same run reuse it.
local maxEventsOfRun = nil

local function maxEvents(metaKey)
  if maxEventsOfRun == nil then
    maxEventsOfRun = tonumber(redis.call("HGET", metaKey, "max-events")) or 10000
  end
  return maxEventsOfRun
end

local function emitEvent(eventsKey, metaKey, event, jobId, ...)
  redis.call("XADD", eventsKey, "MAXLEN", "~", maxEvents(metaKey), "*", "event", event, "jobId",
    jobId, ...)
end
