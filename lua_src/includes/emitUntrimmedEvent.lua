-- Appends an event without trimming the stream: for a pickup's `active` event, which the job's
-- finish (or the next add) follows with a trim. Reading the limit and trimming cost the server
-- more than the rest of a pickup's event (make bench); BullMQ's pickup does not trim either.
local function emitUntrimmedEvent(eventsKey, event, jobId, ...)
  redis.call("XADD", eventsKey, "*", "event", event, "jobId", jobId, ...)
end
