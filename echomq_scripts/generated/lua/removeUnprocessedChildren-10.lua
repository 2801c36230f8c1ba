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
-- Appends an event to the queue's stream, trimmed to about the length the queue's meta hash
-- sets in "max-events" (decimal digits; unset, or anything else, reads as 10000).
local function emitEvent(eventsKey, metaKey, event, jobId, ...)
  -- Handed to XADD as the text it is: a Lua number is printed again by redis.call, which costs
  -- the server more than the whole check (make bench).
  local maxEvents = redis.call("HGET", metaKey, "max-events")
  if not maxEvents or not string.find(maxEvents, "^%d+$") then
    maxEvents = "10000"
  end
  redis.call("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", event, "jobId", jobId, ...)
end
-- Releases the deduplication id that a job being removed held (`dedupId`, its "deid" field, or
-- nil), TTL or not, unless another job holds it by now; an add kept for when it finished
-- (keepLastIfActive) goes with it.
local function releaseDedupId(prefix, jobId, dedupId)
  if dedupId and redis.call("GET", prefix .. "de:" .. dedupId) == jobId then
    redis.call("DEL", prefix .. "de:" .. dedupId, prefix .. "dn:" .. dedupId)
  end
end
-- Deletes a job's hash and its companion keys: its lock, its logs, and a parent's :dependencies,
-- :processed, :failed (ignored children) and :unsuccessful (failed children).
local function removeJobKeys(prefix, jobId)
  local jobKey = prefix .. jobId
  redis.call("DEL", jobKey, jobKey .. ":lock", jobKey .. ":logs", jobKey .. ":dependencies",
    jobKey .. ":processed", jobKey .. ":failed", jobKey .. ":unsuccessful")
end

-- Deletes a job in whatever state holds it: out of that state (`places`, the states to look in,
-- each { key, name }), and out of the stalled set; its deduplication id (`dedupId`, its "deid",
-- or nil) released as on removal; its hash and companion keys deleted; and a `removed` event
-- with the state it was in. What its parent records of it is the caller's to mend.
local function deleteJob(prefix, jobId, dedupId, places, stalledKey, eventsKey, metaKey)
  local prev = "unknown"
  for _, place in ipairs(places) do
    local name = place[2]
    local removed
    if name == "wait" or name == "paused" or name == "active" then
      removed = redis.call("LREM", place[1], "0", jobId)
    else
      removed = redis.call("ZREM", place[1], jobId)
    end
    if removed > 0 then
      prev = name
    end
  end
  redis.call("SREM", stalledKey, jobId)
  releaseDedupId(prefix, jobId, dedupId)
  removeJobKeys(prefix, jobId)
  emitEvent(eventsKey, metaKey, "removed", jobId, "prev", prev)
end
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait", "emq:{q}:7:lock"),
-- or nil when the key is not one of a queue's: job keys are built from it, so they carry the
-- queue's hash tag and land on its Cluster slot. The scripts that delete by the keys a runtime
-- passes check each against it.
local function queuePrefix(key)
  return string.match(key, "^(emq:{[^{}]*}:)")
end
-- Priorities are scored priority * 2^32 + a queue-wide counter, so jobs of one priority leave
-- in the order they arrived. 2^53 bounds the score: priorities go up to 2^21 - 1.
local function priorityScore(priority, pcKey)
  return priority * 4294967296 + redis.call("INCR", pcKey) % 4294967296
end
-- The marker is a sorted set with one member, "next", whose score says when work is due: 0 for
-- now, a timestamp for the next delayed job. Idle workers block on it (BZPOPMIN).

-- Lowers the marker to `dueAt`, adding it when missing. A busy queue's marker already says 0:
-- reading it first spares the write (ZSCORE costs the server less than a ZADD that changes
-- nothing).
local function signalWork(markerKey, dueAt)
  local score = redis.call("ZSCORE", markerKey, "next")
  if not score or tonumber(score) > dueAt then
    redis.call("ZADD", markerKey, dueAt, "next")
  end
end

-- Puts a ready job with a priority into prioritized, also while the queue is paused (workers
-- are woken only when it is not).
local function pushPrioritized(prioritizedKey, pcKey, markerKey, paused, jobId, priority)
  redis.call("ZADD", prioritizedKey, priorityScore(priority, pcKey), jobId)
  if not paused then
    signalWork(markerKey, 0)
  end
  return "prioritized"
end

-- Puts a ready job without a priority where workers take it: the head of wait (they take from
-- the tail), or of paused while the queue is paused; with `lifo`, the tail, where workers take
-- next. Returns the state it went to. One function for both ends: each included function costs
-- every call of a script that includes it a closure (make bench).
local function pushReady(waitKey, pausedKey, markerKey, paused, jobId, lifo)
  local push = lifo and "RPUSH" or "LPUSH"
  if paused then
    redis.call(push, pausedKey, jobId)
    return "paused"
  end
  redis.call(push, waitKey, jobId)
  signalWork(markerKey, 0)
  return "wait"
end

-- Puts a job that became ready where workers take it, by the priority its hash holds; without
-- one, with `lifo` (a job run again whose options set it), where workers take next. Returns the
-- state it went to.
local function enqueueReadyJob(waitKey, pausedKey, prioritizedKey, pcKey, markerKey, prefix, jobId,
    paused, lifo)
  local priority = tonumber(redis.call("HGET", prefix .. jobId, "priority")) or 0
  if priority > 0 then
    return pushPrioritized(prioritizedKey, pcKey, markerKey, paused, jobId, priority)
  end
  return pushReady(waitKey, pausedKey, markerKey, paused, jobId, lifo)
end

-- Moves a parent out of waiting-children to where a ready job goes: prioritized when its hash has
-- a priority, else wait, or paused while the queue is paused. With `whenDone` it goes only once no
-- child is pending and none is recorded in :unsuccessful (a child that failed without a policy
-- that lets the parent go on holds it). A parent that is not in waiting-children (active, or
-- removed) stays where it is. The other keys are built from the prefix: the scripts that release
-- a parent do not all take them in KEYS.
local function releaseParent(waitingChildrenKey, parentId, whenDone)
  local prefix = queuePrefix(waitingChildrenKey)
  local parentKey = prefix .. parentId
  if whenDone and (redis.call("SCARD", parentKey .. ":dependencies") > 0
      or redis.call("EXISTS", parentKey .. ":unsuccessful") == 1) then
    return
  end
  if redis.call("ZREM", waitingChildrenKey, parentId) == 0 then
    return
  end
  local metaKey = prefix .. "meta"
  enqueueReadyJob(prefix .. "wait", prefix .. "paused", prefix .. "prioritized", prefix .. "pc",
    prefix .. "marker", prefix, parentId, redis.call("HEXISTS", metaKey, "paused") == 1)
  emitEvent(prefix .. "events", metaKey, "waiting", parentId, "prev", "waiting-children")
end

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
