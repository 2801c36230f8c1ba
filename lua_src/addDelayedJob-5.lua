--- Adds a job that runs after a delay: to delayed, scored by the time it becomes due.
--- An existing custom id, or a deduplication id still held, adds nothing and answers that job's
--- id. A job with a parent is added by addFlow.
--- @key delayed  `emq:{q}:delayed`  the delayed set, scored by run-at
--- @key meta     `emq:{q}:meta`     the queue's meta hash
--- @key id       `emq:{q}:id`       the counter of generated ids
--- @key events   `emq:{q}:events`   the event stream
--- @key marker   `emq:{q}:marker`   the marker idle workers block on
--- @arg job_id     id? = ""            a custom id, or "" to generate one
--- @arg name       string              the job's name
--- @arg data       json                the job's data: any JSON value
--- @arg opts       json(object) = {}   the job's options (attempts, backoff, ...)
--- @arg now        int(0..) = @now     the caller's clock, in milliseconds
--- @arg dedup_id   string = ""         a deduplication id, or ""
--- @arg delay      int(0..)            milliseconds from now until the job is due
--- @return Added(job_id: string, added: int)
---     the job's id, and 1 when it was added (0 when it existed)
--- @include "includes/addJob"
--- @include "includes/emitEvent"
--- @include "includes/intArg"
--- @include "includes/runAtArg"
--- @include "includes/signalWork"

local delayedKey, metaKey, idKey, eventsKey, markerKey =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local jobId, name, data, opts, now, dedupId = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local delay = intArg(ARGV[7], "delay", 0)

local runAt = runAtArg(now, delay, "delay") -- refused before anything else
local id, added = addJob(idKey, eventsKey, metaKey, jobId, name, data, opts, now, dedupId,
  { "delay", delay })
if added then
  redis.call("ZADD", delayedKey, runAt, id)
  signalWork(markerKey, runAt)
  emitEvent(eventsKey, metaKey, "delayed", id, "delay", delay, "runAt", runAt)
end
return { id, added and 1 or 0 }
