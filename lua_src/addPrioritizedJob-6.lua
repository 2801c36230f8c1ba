--- Adds a job with a priority: to prioritized, where a lower number runs first and jobs of one
--- priority run in the order they were added.
--- An existing custom id, or a deduplication id still held, adds nothing and answers that job's id.
--- @key prioritized  `emq:{q}:prioritized`  the prioritized set
--- @key pc           `emq:{q}:pc`           the counter that orders jobs of one priority
--- @key meta         `emq:{q}:meta`         the queue's meta hash
--- @key id           `emq:{q}:id`           the counter of generated ids
--- @key events       `emq:{q}:events`       the event stream
--- @key marker       `emq:{q}:marker`       the marker idle workers block on
--- @arg job_id     string  a custom id, or "" to generate one
--- @arg name       string  the job's name
--- @arg data       string  the job's data, as JSON
--- @arg opts       string  the job's options, as JSON (attempts, backoff, removeOnComplete, ...)
--- @arg now        int     the caller's clock, in milliseconds
--- @arg dedup_id   string  a deduplication id, or ""
--- @arg parent_id  string  the id of a parent job in this queue, or ""
--- @arg priority   int     1 (runs first) to 2097151
--- @return tuple[string, int]  the job's id, and 1 when it was added (0 when it existed)
--- @error -5 ParentJobNotExist
--- @include "includes/addJob"
--- @include "includes/enqueue"

local priority = tonumber(ARGV[8])
if not priority or priority < 1 or priority > 2097151 or priority % 1 ~= 0 then
  error("priority must be an integer from 1 to 2097151")
end
local queue = { prioritized = KEYS[1], pc = KEYS[2], meta = KEYS[3], marker = KEYS[6] }
local jobId, added = addJob(KEYS[4], addArgs(), { "priority", priority })
if jobId == -5 then
  return -5
end
if added then
  enqueueReady(queue, jobId, priority)
  emitEvent(KEYS[5], KEYS[3], "prioritized", jobId, "priority", priority)
end
return { jobId, added and 1 or 0 }
