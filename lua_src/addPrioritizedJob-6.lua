--- Adds a job with a priority: to prioritized, where a lower number runs first and jobs of one
--- priority run in the order they were added.
--- An existing custom id, or a deduplication id still held, adds nothing and answers that job's
--- id. A job with a parent is added by addFlow.
--- @key prioritized  `emq:{q}:prioritized`  the prioritized set
--- @key pc           `emq:{q}:pc`           the counter that orders jobs of one priority
--- @key meta         `emq:{q}:meta`         the queue's meta hash
--- @key id           `emq:{q}:id`           the counter of generated ids
--- @key events       `emq:{q}:events`       the event stream
--- @key marker       `emq:{q}:marker`       the marker idle workers block on
--- @arg job_id     id? = ""            a custom id, or "" to generate one
--- @arg name       string              the job's name
--- @arg data       json                the job's data: any JSON value
--- @arg opts       json(object) = {}   the job's options (attempts, backoff, ...)
--- @arg now        int(0..) = @now     the caller's clock, in milliseconds
--- @arg dedup_id   string = ""         a deduplication id, or ""
--- @arg priority   int(1..2097151)     1 (runs first) to 2097151
--- @return Added(job_id: string, added: int)
---     the job's id, and 1 when it was added (0 when it existed)
--- @include "includes/addJob"
--- @include "includes/emitEvent"
--- @include "includes/intArg"
--- @include "includes/pushPrioritized"

local prioritizedKey, pcKey, metaKey, idKey, eventsKey, markerKey =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local jobId, name, data, opts, now, dedupId = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local priority = intArg(ARGV[7], "priority", 1, 2097151) -- refused before anything else

local id, added = addJob(idKey, eventsKey, metaKey, jobId, name, data, opts, now, dedupId,
  { "priority", priority })
if added then
  local paused = redis.call("HEXISTS", metaKey, "paused") == 1
  pushPrioritized(prioritizedKey, pcKey, markerKey, paused, id, priority)
  emitEvent(eventsKey, metaKey, "prioritized", id, "priority", priority)
end
return { id, added and 1 or 0 }
