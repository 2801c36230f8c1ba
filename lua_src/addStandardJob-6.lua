--- Adds a job that can run now: to wait, or to paused while the queue is paused; last in line,
--- or with opts.lifo where workers take next.
--- An existing custom id, or a deduplication id still held, adds nothing and answers that job's
--- id. A job with a parent is added by addFlow.
--- @key wait    `emq:{q}:wait`    the wait list
--- @key paused  `emq:{q}:paused`  the paused list
--- @key meta    `emq:{q}:meta`    the queue's meta hash
--- @key id      `emq:{q}:id`      the counter of generated ids
--- @key events  `emq:{q}:events`  the event stream
--- @key marker  `emq:{q}:marker`  the marker idle workers block on
--- @arg job_id     id? = ""            a custom id, or "" to generate one
--- @arg name       string              the job's name
--- @arg data       json                the job's data: any JSON value
--- @arg opts       json(object) = {}   the job's options (attempts, backoff, ...)
--- @arg now        int(0..) = @now     the caller's clock, in milliseconds
--- @arg dedup_id   string = ""         a deduplication id, or ""
--- @return Added(job_id: string, added: int)
---     the job's id, and 1 when it was added (0 when it existed)
--- @include "includes/addJob"
--- @include "includes/emitEvent"
--- @include "includes/lifoOption"
--- @include "includes/pushReady"

local waitKey, pausedKey, metaKey, idKey, eventsKey, markerKey =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local jobId, name, data, opts, now, dedupId = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]

local id, added = addJob(idKey, eventsKey, metaKey, jobId, name, data, opts, now, dedupId, {})
if added then
  local paused = redis.call("HEXISTS", metaKey, "paused") == 1
  local state = pushReady(waitKey, pausedKey, markerKey, paused, id, lifoOption(opts))
  emitEvent(eventsKey, metaKey, state == "paused" and "paused" or "waiting", id, "name", name)
end
return { id, added and 1 or 0 }
