-- Appends an event to the queue's stream, trimmed to about the length the queue's meta hash
-- sets in "max-events" (10000 when unset).
local function emitEvent(eventsKey, metaKey, event, jobId, ...)
  local maxEvents = tonumber(redis.call("HGET", metaKey, "max-events")) or 10000
  redis.call("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", event, "jobId", jobId, ...)
end
