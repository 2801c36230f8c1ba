--- Adds a parent job: to waiting-children, where it stays until the last child added with it as
--- parent_id completes.
--- An existing custom id, or a deduplication id still held, adds nothing and answers that job's id.
--- @key waiting_children  `emq:{q}:waiting-children`  the waiting-children set
--- @key meta              `emq:{q}:meta`              the queue's meta hash
--- @key id                `emq:{q}:id`                the counter of generated ids
--- @key events            `emq:{q}:events`            the event stream
--- @arg job_id     id?                 a custom id, or "" to generate one
--- @arg name       string              the job's name
--- @arg data       string              the job's data, as JSON
--- @arg opts       json(object)        the job's options (attempts, backoff, ...)
--- @arg now        int(0..)            the caller's clock, in milliseconds
--- @arg dedup_id   string              a deduplication id, or ""
--- @arg parent_id  id?                 the id of a parent job in this queue, or ""
--- @return tuple[string, int]  the job's id, and 1 when it was added (0 when it existed)
--- @error -5 ParentJobNotExist
--- @include "includes/addJob"
--- @include "includes/emitEvent"

local waitingChildrenKey, metaKey, idKey, eventsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local jobId, name, data, opts, now, dedupId, parentId =
  ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]

local id, added = addJob(idKey, jobId, name, data, opts, now, dedupId, parentId, {})
if id == -5 then
  return -5
end
if added then
  redis.call("ZADD", waitingChildrenKey, now, id)
  emitEvent(eventsKey, metaKey, "waiting-children", id)
end
return { id, added and 1 or 0 }
