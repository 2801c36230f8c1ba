--- @include "emitEvent"
--- @include "lifoOption"
--- @include "pushPrioritized"
--- @include "pushReady"
--- @include "signalWork"

-- Puts a job just created where an add puts it, with the add's event: to delayed when it is due
-- at `runAt` (nil for now; `delay` the ms it was given), workers woken for then, else to
-- prioritized with a `priority`, else to wait, or paused while the queue is `paused`: at the
-- head, or where workers take next when its options (`opts`, JSON) set lifo. `keys` are the
-- queue's wait, paused, delayed, prioritized, pc, marker, events and meta keys, in that order.
local function enqueueNewJob(keys, jobId, name, delay, runAt, priority, paused, opts)
  local markerKey, eventsKey, metaKey = keys[6], keys[7], keys[8]
  if runAt then
    redis.call("ZADD", keys[3], runAt, jobId)
    signalWork(markerKey, runAt)
    emitEvent(eventsKey, metaKey, "delayed", jobId, "delay", delay, "runAt", runAt)
  elseif priority > 0 then
    pushPrioritized(keys[4], keys[5], markerKey, paused, jobId, priority)
    emitEvent(eventsKey, metaKey, "prioritized", jobId, "priority", priority)
  else
    local state = pushReady(keys[1], keys[2], markerKey, paused, jobId, lifoOption(opts))
    emitEvent(eventsKey, metaKey, state == "paused" and "paused" or "waiting", jobId, "name", name)
  end
end
