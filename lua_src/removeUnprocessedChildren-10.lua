--- Removes a parent's pending children, and theirs, to any depth: each from its state, with its
--- hash, its companion keys and its deduplication id, and a `removed` event. A child that a worker
--- holds (its lock exists) is kept, with its own children. A pending child has not finished, so
--- none is in completed or failed: the children that finished are the parent's results, and
--- stay. The parent, with nothing pending any more, moves out of
--- waiting-children as when its last child completes.
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
--- @arg job_id  id  the parent's id
--- @return list[string]  the ids removed, the parent's own children first
--- @error -1 JobNotExist
--- @include "includes/deleteJob"
--- @include "includes/queuePrefix"
--- @include "includes/releaseParent"

local waitKey, pausedKey, activeKey, delayedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local prioritizedKey, waitingChildrenKey, stalledKey = KEYS[5], KEYS[6], KEYS[7]
local eventsKey, metaKey, jobKey = KEYS[8], KEYS[9], KEYS[10]
local jobId = ARGV[1]

if redis.call("EXISTS", jobKey) == 0 then
  return -1
end
local prefix = queuePrefix(waitingChildrenKey)
-- A pending child has not finished: it is in none of completed and failed.
local places = { { waitKey, "wait" }, { pausedKey, "paused" }, { activeKey, "active" },
  { delayedKey, "delayed" }, { prioritizedKey, "prioritized" },
  { waitingChildrenKey, "waiting-children" } }

-- Breadth first, from a queue of job keys (no recursion: a tree of any depth).
local queue = redis.call("SMEMBERS", jobKey .. ":dependencies")
table.sort(queue) -- a set has no order: sorted, so that the reply and the events are the same
local removed = {}
local head = 1
while head <= #queue do
  local childKey = queue[head]
  head = head + 1
  local childId = string.sub(childKey, #prefix + 1)
  if redis.call("EXISTS", childKey .. ":lock") == 0 then
    local grandchildren = redis.call("SMEMBERS", childKey .. ":dependencies")
    table.sort(grandchildren)
    for _, grandchild in ipairs(grandchildren) do
      queue[#queue + 1] = grandchild
    end
    local stored = redis.call("HMGET", childKey, "parentKey", "deid")
    if stored[1] then
      redis.call("SREM", stored[1] .. ":dependencies", childKey)
    end
    deleteJob(prefix, childId, stored[2] or nil, places, stalledKey, eventsKey, metaKey)
    removed[#removed + 1] = childId
  end
end
releaseParent(waitingChildrenKey, jobId, true)
return removed
