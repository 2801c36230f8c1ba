--- Removes a job scheduler, with its iteration not yet picked up (a `removed` event); one
--- picked up, or back for a retry, runs on as a job of its own.
--- @key schedulers   `emq:{q}:repeat`                 the job schedulers, scored by next run
--- @key scheduler    `emq:{q}:repeat:<scheduler_id>`  the scheduler's settings
--- @key wait         `emq:{q}:wait`                   the wait list
--- @key paused       `emq:{q}:paused`                 the paused list
--- @key delayed      `emq:{q}:delayed`                the delayed set
--- @key prioritized  `emq:{q}:prioritized`            the prioritized set
--- @key events       `emq:{q}:events`                 the event stream
--- @key meta         `emq:{q}:meta`                   the queue's meta hash
--- @arg scheduler_id  id  the scheduler's id
--- @return int  1 when the scheduler was removed, 0 when there was none
-- Where a job scheduler's iteration `jobId` waits to run for the first time: the key and the name
-- of the state that holds it, or nil when it is not waiting, or has run already (it has
-- processedOn: picked up, then back for a retry). `places` are the queue's delayed, prioritized,
-- wait and paused keys, in that order. Only a pending iteration is replaced, or removed with its
-- scheduler; one that ran is a job's own.
local function pendingIteration(prefix, jobId, places)
  if redis.call("HEXISTS", prefix .. jobId, "processedOn") == 1 then
    return nil
  end
  local names = { "delayed", "prioritized", "wait", "paused" }
  for i = 1, 2 do
    if redis.call("ZSCORE", places[i], jobId) then
      return places[i], names[i]
    end
  end
  for i = 3, 4 do
    if redis.call("LPOS", places[i], jobId) then
      return places[i], names[i]
    end
  end
  return nil
end
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait"): job keys are built
-- from it, so they carry the queue's hash tag and land on its Cluster slot.
local function queuePrefix(key)
  return string.match(key, "^(.*:)[^:]*$")
end
-- Appends an event to the queue's stream, trimmed to about the length the queue's meta hash
-- sets in "max-events" (10000 when unset).
local function emitEvent(eventsKey, metaKey, event, jobId, ...)
  local maxEvents = tonumber(redis.call("HGET", metaKey, "max-events")) or 10000
  redis.call("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", event, "jobId", jobId, ...)
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
-- the tail), or of paused while the queue is paused. Returns the state it went to.
local function pushReady(waitKey, pausedKey, markerKey, paused, jobId)
  if paused then
    redis.call("LPUSH", pausedKey, jobId)
    return "paused"
  end
  redis.call("LPUSH", waitKey, jobId)
  signalWork(markerKey, 0)
  return "wait"
end

-- Puts a job that became ready where workers take it, by the priority its hash holds. Returns
-- the state it went to.
local function enqueueReadyJob(waitKey, pausedKey, prioritizedKey, pcKey, markerKey, prefix, jobId,
    paused)
  local priority = tonumber(redis.call("HGET", prefix .. jobId, "priority")) or 0
  if priority > 0 then
    return pushPrioritized(prioritizedKey, pcKey, markerKey, paused, jobId, priority)
  end
  return pushReady(waitKey, pausedKey, markerKey, paused, jobId)
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
-- Deletes a job's hash and its companion keys: its lock, and a parent's :dependencies,
-- :processed, :failed (ignored children) and :unsuccessful (failed children).
local function removeJobKeys(prefix, jobId)
  local jobKey = prefix .. jobId
  redis.call("DEL", jobKey, jobKey .. ":lock", jobKey .. ":dependencies", jobKey .. ":processed",
    jobKey .. ":failed", jobKey .. ":unsuccessful")
end

-- Removes a job scheduler's pending iteration `jobId` from `stateKey` (the state `state` that
-- pendingIteration found), with its keys, from its parent's records (a flow may have named its id
-- as a child), and appends `removed`.
local function removePendingIteration(prefix, jobId, stateKey, state, eventsKey, metaKey)
  if state == "wait" or state == "paused" then
    redis.call("LREM", stateKey, 0, jobId)
  else
    redis.call("ZREM", stateKey, jobId)
  end
  leaveParent(prefix, prefix .. jobId, redis.call("HGET", prefix .. jobId, "parentKey") or nil)
  removeJobKeys(prefix, jobId)
  emitEvent(eventsKey, metaKey, "removed", jobId, "prev", state)
end
-- The id of a job scheduler's iteration due at `millis` (a number, or a sorted set's score as
-- Redis gives it): "repeat-<scheduler id>-<millis>". The id rule bars ":", so the parts are
-- joined with "-"; the last "-" starts the millis, which are digits, so the id names one
-- scheduler and one time.
local function schedulerJobId(schedulerId, millis)
  return "repeat-" .. schedulerId .. "-" .. string.format("%d", tonumber(millis))
end

local schedulersKey, schedulerKey, waitKey, pausedKey, delayedKey = KEYS[1], KEYS[2], KEYS[3],
  KEYS[4], KEYS[5]
local prioritizedKey, eventsKey, metaKey = KEYS[6], KEYS[7], KEYS[8]
local schedulerId = ARGV[1]

local current = redis.call("ZSCORE", schedulersKey, schedulerId)
if not current then
  return 0
end
local prefix = queuePrefix(schedulersKey)
local jobId = schedulerJobId(schedulerId, current)
local stateKey, state = pendingIteration(prefix, jobId,
  { delayedKey, prioritizedKey, waitKey, pausedKey })
if state then
  removePendingIteration(prefix, jobId, stateKey, state, eventsKey, metaKey)
end
redis.call("ZREM", schedulersKey, schedulerId)
redis.call("DEL", schedulerKey)
return 1
