--- Removes a parent's pending children, and theirs, to any depth, from the bottom up, at most
--- `limit` a call: each from its state, with its hash, its companion keys and its deduplication
--- id, and a `removed` event. A child that a worker holds (its lock exists) is kept, with its own
--- children. A pending child has not finished, so none is in completed or failed: the children
--- that finished are the parent's results, and stay. When the walk is over, the parent, with
--- nothing pending any more, moves out of waiting-children as when its last child completes.
--- @key wait              `emq:{q}:wait`              the wait list
--- @key paused            `emq:{q}:paused`            the paused list
--- @key active            `emq:{q}:active`            the active list
--- @key delayed           `emq:{q}:delayed`           the delayed set
--- @key prioritized       `emq:{q}:prioritized`       the prioritized set
--- @key waiting_children  `emq:{q}:waiting-children`  the waiting-children set
--- @key stalled           `emq:{q}:stalled`           the stalled set
--- @key events            `emq:{q}:events`            the event stream
--- @key meta              `emq:{q}:meta`              the queue's meta hash
--- @key job               `emq:{q}:<job_id>`          the parent's hash
--- @arg job_id  id             the parent's id
--- @arg limit   int(1..10000)  the most children this call removes (and about the most it reads)
--- @return tuple[int, list[string]]  1 when a next call goes on, 0 when the walk is over (no
---     child left that it can take), and the ids removed, each after its own children
--- @error -1 JobNotExist
--- @include "includes/checkJobKey"
--- @include "includes/checkQueueKeys"
--- @include "includes/deleteJobs"
--- @include "includes/intArg"
--- @include "includes/releaseParent"
--- @include "includes/treeBatch"

local waitKey, pausedKey, activeKey, delayedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local prioritizedKey, waitingChildrenKey, stalledKey = KEYS[5], KEYS[6], KEYS[7]
local eventsKey, metaKey, jobKey = KEYS[8], KEYS[9], KEYS[10]
local jobId = ARGV[1]
local limit = intArg(ARGV[2], "limit", 1, 10000)

-- The script deletes by the keys it is given: they must be one queue's, and the job's this id's.
local queueKeys = { waitKey, pausedKey, activeKey, delayedKey, prioritizedKey, waitingChildrenKey,
  stalledKey, eventsKey, metaKey }
local names = { "wait", "paused", "active", "delayed", "prioritized", "waiting-children",
  "stalled", "events", "meta" }
local prefix = checkQueueKeys(queueKeys, names)
if checkJobKey(jobKey, jobId, "") ~= prefix then -- the job's key, but in another queue
  error("key " .. jobKey .. " is not the key of job '" .. jobId .. "' in this queue")
end
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end

local batch, over, moved = treeBatch(prefix, jobId, { "dependencies" }, limit, false,
  function(id) return redis.call("EXISTS", prefix .. id .. ":lock") == 1 and "keep" or "take" end)
-- The states a pending child may be in (it has not finished: none of completed and failed).
local places = {}
for i = 1, 6 do
  places[i] = { queueKeys[i], names[i] }
end
deleteJobs(prefix, batch, places, stalledKey, eventsKey, metaKey)
-- Over; or nothing taken and nothing moved: every child within the walk's reach is held, and a
-- next call would do no more.
if over or (#batch == 0 and not moved) then
  releaseParent(waitingChildrenKey, jobId, true)
  return { 0, batch }
end
return { 1, batch }
