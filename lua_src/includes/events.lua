-- Appends an event to the queue's stream, trimmed to about the length the queue's meta hash
-- sets in "max-events" (10000 when unset).
-- The limit is read once per script run: every key of one run belongs to one queue, and a run
-- cannot see another client's write, so later events of the same run reuse it. A script that
-- already read the meta hash passes the raw value to seedMaxEvents and spares the read.
local maxEventsOfRun = nil
-- "~" trims whole stream nodes (cheap, the stream may run slightly over the limit); a script
-- that promises the exact limit sets "=" before its first event.
local eventTrim = "~"

local function seedMaxEvents(raw)
  if maxEventsOfRun == nil then
    maxEventsOfRun = tonumber(raw) or 10000
  end
end

local function maxEvents(metaKey)
  if maxEventsOfRun == nil then
    seedMaxEvents(redis.call("HGET", metaKey, "max-events"))
  end
  return maxEventsOfRun
end

local function emitEvent(eventsKey, metaKey, event, jobId, ...)
  redis.call("XADD", eventsKey, "MAXLEN", eventTrim, maxEvents(metaKey), "*", "event", event,
    "jobId", jobId, ...)
end
