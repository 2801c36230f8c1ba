--- Removes a state's jobs older than a grace period, a bounded batch a call, answering which.
--- Each call reads at most `limit` entries of the state's key, from where the
--- cursor says, and removes those that qualify: older than `now - grace` (for completed,
--- failed and waiting-children by their score; for the others by the job's own times), not held
--- by a worker (active with a lock) and not a job scheduler's current iteration. A job goes
--- with its lock, companion keys and deduplication id, and its parent stops waiting for it.
--- @key set         `emq:{q}:<state>`  the state's key
--- @key stalled     `emq:{q}:stalled`  the stalled set
--- @key events      `emq:{q}:events`   the event stream
--- @key meta        `emq:{q}:meta`     the queue's meta hash
--- @key schedulers  `emq:{q}:repeat`   the job schedulers, scored by next run
--- @arg state   enum(completed|failed|delayed|wait|paused|prioritized|active|waiting-children)  the state to clean
--- @arg now     int(0..) = @now  the caller's clock, ms
--- @arg grace   int(0..)  how old a job must be to go, in ms before now
--- @arg limit   int(1..10000)  the most entries the call reads (so the most it removes)
--- @arg cursor  int(0..) = 0  0 to start, then what the previous call answered
--- @return tuple[int, list[string]]  the cursor for the next call (0: the walk is over), and
---     the ids removed, in the order removed
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
-- An argument that must be one of the words given after `name`, as its header's enum(...) lists
-- them: enumArg(ARGV[1], "action", "pause", "resume"). Returns the value. The words are compared
-- one by one, without building a table of them: a call that passes costs a comparison or two.
local function enumArg(value, name, ...)
  local count = select("#", ...)
  for i = 1, count do
    if value == select(i, ...) then
      return value
    end
  end
  local words = "'" .. select(1, ...) .. "'"
  for i = 2, count do
    words = words .. (i == count and " or '" or ", '") .. select(i, ...) .. "'"
  end
  error(name .. " must be " .. words .. ", got '" .. tostring(value) .. "'")
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

-- An integer argument that the script hands to Redis as the caller sent it (ZADD, HSET, PX):
-- decimal digits only, from `low` up to `high` (nil: 2^53 - 1). Redis would refuse the text " 5"
-- that tonumber reads, and only after the script's first write; and a number handed to
-- redis.call costs a conversion to text. Returns the number, for sums.
local function digitsArg(value, name, low, high)
  if not string.find(value, "^%d+$") then
    error(name .. " must be an integer from " .. low .. " to "
      .. (high and tostring(high) or "2^53 - 1") .. " in decimal digits, got '" .. value .. "'")
  end
  return intArg(value, name, low, high)
end

-- The caller's clock, in ms: decimal digits, as Redis reads it. Returns the number.
local function nowArg(value)
  return digitsArg(value, "now", 0)
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

local setKey, stalledKey, eventsKey, metaKey, schedulersKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4],
  KEYS[5]
local state = enumArg(ARGV[1], "state", "completed", "failed", "delayed", "wait", "paused",
  "prioritized", "active", "waiting-children")
local cutoff = nowArg(ARGV[2]) - intArg(ARGV[3], "grace", 0)
local limit = intArg(ARGV[4], "limit", 1, 10000)
local cursor = intArg(ARGV[5], "cursor", 0)

local prefix = checkQueueKeys({ setKey, stalledKey, eventsKey, metaKey, schedulersKey },
  { state, "stalled", "events", "meta", "repeat" })

-- The place in the key where this call starts: how many entries the walk kept before it. Past
-- the cursor 0, a cursor is that place plus one, so that 0 can mean the end.
local place = cursor > 0 and cursor - 1 or 0
local isList = state == "wait" or state == "paused" or state == "active"
-- The job's own times a state is aged by, the first one set (the finished states are aged by
-- their scores, which are their finishing times, and waiting-children by when it was entered).
local times = { "finishedOn", "processedOn", "timestamp" }
if state == "delayed" then
  times = { "processedOn", "timestamp" }
elseif state == "prioritized" then
  times = { "timestamp" }
end

local function qualifies(id)
  if schedulerIteration(prefix, schedulersKey, id) then
    return false
  end
  if state == "active" and redis.call("EXISTS", prefix .. id .. ":lock") == 1 then
    return false
  end
  local stored = redis.call("HMGET", prefix .. id, unpack(times))
  for i = 1, #times do
    if stored[i] then
      return tonumber(stored[i]) <= cutoff
    end
  end
  return true -- a job without a time (no hash) is older than any
end

local removed = {}
local read, more
if state == "completed" or state == "failed" or state == "waiting-children" then
  local ids = redis.call("ZRANGEBYSCORE", setKey, "-inf", string.format("%d", cutoff), "LIMIT",
    tostring(place), tostring(limit))
  read = #ids
  for _, id in ipairs(ids) do
    redis.call("ZREM", setKey, id)
    removed[#removed + 1] = id
  end
  -- None kept: the next old enough is at the same place now.
  more = #redis.call("ZRANGEBYSCORE", setKey, "-inf", string.format("%d", cutoff), "LIMIT",
    tostring(place), "1") > 0
elseif isList then
  -- From the tail, where the oldest are: an entry to remove is marked ("" is no job's id) and
  -- the marks are taken out together, so the places of the others hold while the call walks.
  local ids = redis.call("LRANGE", setKey, tostring(-(place + limit)), tostring(-(place + 1)))
  read = #ids
  more = place + read < redis.call("LLEN", setKey)
  for i = #ids, 1, -1 do
    if qualifies(ids[i]) then
      redis.call("LSET", setKey, tostring(-(place + #ids - i + 1)), "")
      removed[#removed + 1] = ids[i]
    end
  end
  if #removed > 0 then
    redis.call("LREM", setKey, tostring(-#removed), "")
  end
else
  local ids = redis.call("ZRANGE", setKey, tostring(place), tostring(place + limit - 1))
  read = #ids
  more = place + read < redis.call("ZCARD", setKey)
  for _, id in ipairs(ids) do
    if qualifies(id) then
      redis.call("ZREM", setKey, id)
      removed[#removed + 1] = id
    end
  end
end

local parents = {}
for i, id in ipairs(removed) do
  if state == "active" then
    redis.call("SREM", stalledKey, id)
  end
  parents[i] = eraseJob(prefix, id) or false
  emitEvent(eventsKey, metaKey, "removed", id, "prev", state)
end
-- Then the parents, so that one released to the key walked comes after the walk's own writes;
-- one removed by this call is gone and is left alone.
for i, id in ipairs(removed) do
  leaveParent(prefix, prefix .. id, parents[i] or nil)
end
emitEvent(eventsKey, metaKey, "cleaned", "", "count", tostring(#removed))

-- The walk is over when the call read to the end of the key.
return { more and place + read - #removed + 1 or 0, removed }
