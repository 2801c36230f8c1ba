--- Removes a job in any state, with its lock, its companion keys and its deduplication id.
--- Its parent stops waiting for it (and goes on when nothing else holds it). With
--- remove_children, its children go too, and theirs, to any depth: pending, completed and
--- failed alike. A job a worker holds (its lock exists), or with a descendant held, is refused
--- with 0; a job scheduler's current iteration, or a descendant that is one, answers -8 (remove
--- the scheduler instead).
--- @key wait              `emq:{q}:wait`              the wait list
--- @key paused            `emq:{q}:paused`            the paused list
--- @key active            `emq:{q}:active`            the active list
--- @key delayed           `emq:{q}:delayed`           the delayed set
--- @key prioritized       `emq:{q}:prioritized`       the prioritized set
--- @key completed         `emq:{q}:completed`         the completed set
--- @key failed            `emq:{q}:failed`            the failed set
--- @key waiting_children  `emq:{q}:waiting-children`  the waiting-children set
--- @key stalled           `emq:{q}:stalled`           the stalled set
--- @key events            `emq:{q}:events`            the event stream
--- @key meta              `emq:{q}:meta`              the queue's meta hash
--- @key schedulers        `emq:{q}:repeat`            the job schedulers, scored by next run
--- @key job               `emq:{q}:<job_id>`          the job's hash
--- @arg job_id           id    the job's id
--- @arg remove_children  bool  remove its children too, to any depth
--- @return int  1 when the job was removed, 0 when it, or one of the descendants to remove, is
---     held by a worker
--- @error -1 JobNotExist
--- @error -8 JobBelongsToJobScheduler
-- The rule for job ids, the same as echomq_scripts/keys.py's (the tests hold the two together). An
-- id becomes part of key names (emq:{q}:<id>, emq:{q}:<id>:lock, ...), so it may not hold ":"
-- (job "7:lock" would be job 7's lock) or a brace (the key's hash tag stays the queue's), and it
-- may not be the name of one of the queue's own keys (job "wait" would make emq:{q}:wait a hash).
-- No reserved name holds a space, so a space ends the search's words.
local RESERVED_JOB_IDS = " wait paused active delayed prioritized completed failed waiting-children stalled events meta id pc limiter marker metrics de dn token repeat "

-- Refuses a custom id that breaks the rule, naming it: `what` is "job id" or "parent id".
local function checkJobId(jobId, what)
  if string.find(jobId, "[{}:]") then
    error(what .. " '" .. jobId .. "' contains '{', '}' or ':', which would make its keys another's")
  end
  if not string.find(jobId, " ", 1, true)
      and string.find(RESERVED_JOB_IDS, " " .. jobId .. " ", 1, true) then
    error(what .. " '" .. jobId .. "' is the name of one of the queue's own keys")
  end
end
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
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait", "emq:{q}:7:lock"),
-- or nil when the key is not one of a queue's: job keys are built from it, so they carry the
-- queue's hash tag and land on its Cluster slot. The scripts that delete by the keys a runtime
-- passes check each against it.
local function queuePrefix(key)
  return string.match(key, "^(emq:{[^{}]*}:)")
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

-- A job taken away (removed, or replaced) leaves its parent's records of children pending or
-- failed (`parentKey`, the job's "parentKey" field, or nil), and the parent goes on when nothing
-- else holds it. A parent that is gone is left alone.
local function leaveParent(prefix, jobKey, parentKey)
  if not parentKey or redis.call("EXISTS", parentKey) == 0 then
    return
  end
  local pending = redis.call("SREM", parentKey .. ":dependencies", jobKey)
  local failed = redis.call("ZREM", parentKey .. ":unsuccessful", jobKey)
  if pending + failed > 0 then
    releaseParent(prefix .. "waiting-children", string.sub(parentKey, #prefix + 1), true)
  end
end
-- The id of a job scheduler's iteration due at `millis` (a number, or a sorted set's score as
-- Redis gives it): "repeat-<scheduler id>-<millis>". The id rule bars ":", so the parts are
-- joined with "-"; the last "-" starts the millis, which are digits, so the id names one
-- scheduler and one time.
local function schedulerJobId(schedulerId, millis)
  return "repeat-" .. schedulerId .. "-" .. string.format("%d", tonumber(millis))
end

local waitKey, pausedKey, activeKey, delayedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local prioritizedKey, completedKey, failedKey, waitingChildrenKey = KEYS[5], KEYS[6], KEYS[7],
  KEYS[8]
local stalledKey, eventsKey, metaKey, schedulersKey, jobKey = KEYS[9], KEYS[10], KEYS[11],
  KEYS[12], KEYS[13]
local jobId, removeChildren = ARGV[1], ARGV[2] == "1"

-- A runtime that builds the keys itself must build them for one queue and this id: the script
-- deletes by them.
checkJobId(jobId, "job id")
local prefix = queuePrefix(waitKey)
local given = { waitKey, pausedKey, activeKey, delayedKey, prioritizedKey, completedKey, failedKey,
  waitingChildrenKey, stalledKey, eventsKey, metaKey, schedulersKey }
local names = { "wait", "paused", "active", "delayed", "prioritized", "completed", "failed",
  "waiting-children", "stalled", "events", "meta", "repeat" }
for i, name in ipairs(names) do
  if not prefix or given[i] ~= prefix .. name then
    error("key " .. given[i] .. " is not the queue's " .. name .. " key")
  end
end
if jobKey ~= prefix .. jobId then
  error("key " .. jobKey .. " is not the key of job '" .. jobId .. "'")
end
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end
local parentKey = redis.call("HGET", jobKey, "parentKey") or nil

-- Whether a job is a scheduler's current iteration, not finished: the scheduler moves on from
-- it (a finished one, whose next was never scheduled, an upsert moves past).
local function schedulersOwn(id)
  local schedulerId = redis.call("HGET", prefix .. id, "rjk")
  local millis = schedulerId and redis.call("ZSCORE", schedulersKey, schedulerId)
  return millis and schedulerJobId(schedulerId, millis) == id
    and not redis.call("ZSCORE", completedKey, id) and not redis.call("ZSCORE", failedKey, id)
end

-- The jobs to remove, the job first, then its descendants breadth first (no recursion: a tree of
-- any depth), each once. All are checked before the first is removed.
local doomed = { jobId }
local seen = { [jobId] = true }
local head = 1
while head <= #doomed do
  local id = doomed[head]
  head = head + 1
  if schedulersOwn(id) then
    return -8
  end
  if redis.call("EXISTS", prefix .. id .. ":lock") == 1 then
    return 0
  end
  if removeChildren then
    local key = prefix .. id
    local children = redis.call("SMEMBERS", key .. ":dependencies")
    local records = { redis.call("HKEYS", key .. ":processed"), redis.call("HKEYS", key .. ":failed"),
      redis.call("ZRANGE", key .. ":unsuccessful", 0, -1) }
    for _, record in ipairs(records) do
      for _, childKey in ipairs(record) do
        children[#children + 1] = childKey
      end
    end
    table.sort(children) -- sets and hashes have no order: sorted, so the events come the same
    for _, childKey in ipairs(children) do
      local childId = string.sub(childKey, #prefix + 1)
      -- A parent's records hold its own queue's job keys; anything else is not a child to take,
      -- nor is one whose job is gone (removed by its retention).
      if string.sub(childKey, 1, #prefix) == prefix and not seen[childId]
          and redis.call("EXISTS", childKey) == 1 then
        seen[childId] = true
        doomed[#doomed + 1] = childId
      end
    end
  end
end

local places = {}
for i = 1, 8 do
  places[i] = { given[i], names[i] } -- the eight states, in the keys' order
end
for _, id in ipairs(doomed) do
  deleteJob(prefix, id, redis.call("HGET", prefix .. id, "deid") or nil, places, stalledKey,
    eventsKey, metaKey)
end

-- Last, the parent outside the removed tree: it no longer waits for the job, pending or failed.
leaveParent(prefix, jobKey, parentKey)
return 1
