--- Empties wait, paused, prioritized and optionally delayed, a bounded batch a call.
--- Each call removes up to `count` jobs, with their companion keys and deduplication ids, and answers
--- how many it removed. A job scheduler's current iteration stays. A removed job's parent stops
--- waiting for it; a parent so released goes to a key the drain empties, and goes too.
--- @key wait         `emq:{q}:wait`         the wait list
--- @key paused       `emq:{q}:paused`       the paused list
--- @key delayed      `emq:{q}:delayed`      the delayed set
--- @key prioritized  `emq:{q}:prioritized`  the prioritized set
--- @key schedulers   `emq:{q}:repeat`       the job schedulers, scored by next run
--- @arg delayed  bool = false   empty the delayed set too
--- @arg count    int(1..10000)  the most jobs the call removes
--- @return int  how many jobs the call removed: fewer than `count` when the keys are empty (but
---     for scheduler iterations)
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait", "emq:{q}:7:lock"),
-- or nil when the key is not one of a queue's: job keys are built from it, so they carry the
-- queue's hash tag and land on its Cluster slot. The scripts that delete by the keys a runtime
-- passes check each against it.
local function queuePrefix(key)
  return string.match(key, "^(emq:{[^{}]*}:)")
end

-- Refuses, with a Lua error, keys that are not the queue's keys of the names given (`keys[i]`
-- must be `<prefix><names[i]>`, one prefix for all): the walks delete by the keys a runtime
-- passes, and a runtime that builds them itself must build them for one queue. Returns the
-- queue's prefix.
local function checkQueueKeys(keys, names)
  local prefix = queuePrefix(keys[1])
  for i, name in ipairs(names) do
    if not prefix or keys[i] ~= prefix .. name then
      error("key " .. keys[i] .. " is not the queue's " .. name .. " key")
    end
  end
  return prefix
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

-- Deletes what a job has besides its place in a state key, which the caller (a walk that takes
-- many jobs out of one key at a time) removes itself: its deduplication id released as on
-- removal, its hash and its companion keys. Returns its "parentKey", or nil: the caller tells
-- the parent once its own writes to the state key are done, since a parent it releases may go
-- to the key it walks.
local function eraseJob(prefix, jobId)
  local fields = redis.call("HMGET", prefix .. jobId, "deid", "parentKey")
  releaseDedupId(prefix, jobId, fields[1] or nil)
  removeJobKeys(prefix, jobId)
  return fields[2] or nil
end
-- The argument checkers, intArg and the other *Arg includes, return the value or raise a Lua
-- error that names the argument: scripts read their arguments before they write anything, so a
-- caller's mistake never leaves a job half-moved. Every bound is also in the script's header, so
-- the generated wrappers refuse the same values before sending them.

-- Integers stop at 2^53 - 1, the largest a Lua number holds exactly.
local MAX_INTEGER = 9007199254740991

-- An integer argument from `low` to `high` (nil: 2^53 - 1).
local function intArg(value, name, low, high)
  local number = tonumber(value)
  high = high or MAX_INTEGER
  if not number or number % 1 ~= 0 or number < low or number > high then
    local upTo = high == MAX_INTEGER and "2^53 - 1" or tostring(high)
    error(name .. " must be an integer from " .. low .. " to " .. upTo .. ", got '"
      .. tostring(value) .. "'")
  end
  return number
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

-- Whether a job is a job scheduler's current iteration: its "rjk" names a scheduler whose score
-- gives the job's id. The walks that empty a queue's keys keep it, as removeJob-13 refuses it:
-- the scheduler moves on only from it.
local function schedulerIteration(prefix, schedulersKey, jobId)
  local schedulerId = redis.call("HGET", prefix .. jobId, "rjk")
  local millis = schedulerId and redis.call("ZSCORE", schedulersKey, schedulerId)
  return millis and schedulerJobId(schedulerId, millis) == jobId or false
end

local waitKey, pausedKey, delayedKey, prioritizedKey, schedulersKey = KEYS[1], KEYS[2], KEYS[3],
  KEYS[4], KEYS[5]
local withDelayed = ARGV[1] == "1"
local budget = intArg(ARGV[2], "count", 1, 10000)

local prefix = checkQueueKeys({ waitKey, pausedKey, delayedKey, prioritizedKey, schedulersKey },
  { "wait", "paused", "delayed", "prioritized", "repeat" })

-- Takes up to `budget` jobs out of one key, from its head (lowest score first), stepping over
-- scheduler iterations, which stay where they are; then their data, then their parents (a parent
-- released goes to wait, paused or prioritized: after the key's own writes). Returns how many.
local function drainKey(key, isList)
  local place, gone = 0, {}
  while budget > 0 do
    local asked = budget
    local ids = redis.call(isList and "LRANGE" or "ZRANGE", key, tostring(place),
      tostring(place + asked - 1))
    local taken = 0
    for i, id in ipairs(ids) do
      if not schedulerIteration(prefix, schedulersKey, id) then
        if isList then
          -- Marked ("" is no job's id) and taken out together: the other places hold meanwhile.
          redis.call("LSET", key, tostring(place + i - 1), "")
        else
          redis.call("ZREM", key, id)
        end
        taken = taken + 1
        gone[#gone + 1] = id
      end
    end
    if isList and taken > 0 then
      redis.call("LREM", key, tostring(taken), "")
    end
    budget = budget - taken
    if #ids < asked then
      break
    end
    place = place + #ids - taken
  end
  local parents = {}
  for i, id in ipairs(gone) do
    parents[i] = eraseJob(prefix, id) or false
  end
  for i, id in ipairs(gone) do
    leaveParent(prefix, prefix .. id, parents[i] or nil)
  end
  return #gone
end

-- Passes over the keys until one removes nothing (or the budget is spent): a parent released by
-- one pass is in a key that the pass may have emptied already.
local removed = 0
repeat
  local pass = drainKey(waitKey, true) + drainKey(pausedKey, true)
  if withDelayed then
    pass = pass + drainKey(delayedKey, false)
  end
  pass = pass + drainKey(prioritizedKey, false)
  removed = removed + pass
until pass == 0 or budget == 0
return removed
