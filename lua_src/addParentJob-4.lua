--- Adds a parent job: to waiting-children, where it stays until its children are done. The
--- children are added after it, naming it as their parent_id; the last one to complete (or to
--- fail under a policy that lets the parent go on) moves it to prioritized when it has a
--- priority, else to wait, or paused while the queue is paused.
--- An existing custom id, or a deduplication id still held, adds nothing and answers that job's
--- id; an existing custom id with another parent answers -7.
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
--- @arg priority   int(0..2097151)     the priority it runs with once released (0: none)
--- @return tuple[string, int]  the job's id, and 1 when it was added (0 when it existed)
--- @error -5 ParentJobNotExist
--- @error -7 ParentJobCannotBeReplaced
--- @include "includes/addJob"
--- @include "includes/emitEvent"
--- @include "includes/intArg"

local waitingChildrenKey, metaKey, idKey, eventsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local jobId, name, data, opts, now, dedupId, parentId =
  ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local priority = intArg(ARGV[8], "priority", 0, 2097151) -- refused before anything else

local id, added = addJob(idKey, eventsKey, metaKey, jobId, name, data, opts, now, dedupId, parentId,
  priority > 0 and { "priority", priority } or {})
if not added and type(id) == "number" then
  return id -- a failure code
end
if added then
  redis.call("ZADD", waitingChildrenKey, now, id)
  emitEvent(eventsKey, metaKey, "waiting-children", id)
end
return { id, added and 1 or 0 }
