-- Appends an event to the queue's stream, trimmed to about the length the queue's meta hash
-- sets in "max-events" (10000 when unset).
local function emitEvent(eventsKey, metaKey, event, jobId, ...)
  local maxEvents = tonumber(redis.call("HGET", metaKey, "max-events")) or 10000
  redis.call("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", event, "jobId", jobId, ...)
end

-- Appends an event without trimming the stream: for a pickup's `active` event, which the job's
-- finish (or the next add) follows with a trim. Reading the limit and trimming cost the server
-- more than the rest of a pickup's event (make bench); BullMQ's pickup does not trim either.
local function emitUntrimmedEvent(eventsKey, event, jobId, ...)
  redis.call("XADD", eventsKey, "*", "event", event, "jobId", jobId, ...)
end
