--- Removes a job in any state, with its lock, its companion keys and its deduplication id.
--- Its parent stops waiting for it (and goes on when nothing else holds it). With
--- remove_children, its children go too, and theirs, to any depth: pending, completed and
--- failed alike, from the bottom up, at most `limit` jobs a call; a tree larger than that takes
--- more calls, each answering 2 until the last removes the job. A job a worker holds (its lock
--- exists), or a descendant held that the call reaches, is refused with 0; a job scheduler's
--- current iteration, or such a descendant, answers -8 (remove the scheduler instead).
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
--- @arg remove_children  bool = false  remove its children too, to any depth
--- @arg limit            int(1..10000)  the most jobs this call removes (and about the most it reads)
--- @return int  1 when the job was removed, 2 when part of its tree was and a next call goes on,
---     0 when it, or a descendant the call reached, is held by a worker
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
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait", "emq:{q}:7:lock"),
-- or nil when the key is not one of a queue's: job keys are built from it, so they carry the
-- queue's hash tag and land on its Cluster slot. The scripts that delete by the keys a runtime
-- passes check each against it.
local function queuePrefix(key)
  return string.match(key, "^(emq:{[^{}]*}:)")
end

-- Refuses a key that is not job `jobId`'s own (`part` ""), or its companion key named `part`
-- (":lock", ":logs"), in some queue; and an id that breaks the id rule. The scripts that write
-- by a job's key a runtime passes check it so: a runtime that builds the key itself must build
-- it for this id. Returns the queue's prefix.
local function checkJobKey(key, jobId, part)
  checkJobId(jobId, "job id")
  local prefix = queuePrefix(key)
  if not prefix or key ~= prefix .. jobId .. part then
    error("key " .. key .. " is not the " .. (part == "" and "key" or part .. " key") .. " of job '"
      .. jobId .. "'")
  end
  return prefix
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

-- The entries a list search reads at a time.
local LIST_READ = 1000

-- Takes the ids of `wanted` (id -> true; `count` of them) that the list at `listKey` holds out of
-- it in one pass from the tail, where the oldest are, that stops once all are found: each found
-- entry is marked ("" is no job's id) and the marks go together at the end. A search per id
-- (LREM) would read the list once per job: a batch on a long wait list would cost its length
-- times the batch. Returns the ids found, as a set.
local function takeFromList(listKey, wanted, count)
  local found, marks = {}, 0
  local length = redis.call("LLEN", listKey)
  local from = length -- the entries from the tail not read yet end before this place
  while from > 0 and marks < count do
    local first = math.max(from - LIST_READ, 0)
    local entries = redis.call("LRANGE", listKey, first, from - 1)
    for i = #entries, 1, -1 do
      local id = entries[i]
      if wanted[id] and not found[id] then
        found[id] = true
        marks = marks + 1
        -- From the tail: LSET walks to a negative place from that end.
        redis.call("LSET", listKey, first + i - 1 - length, "")
      end
    end
    from = first
  end
  if marks > 0 then
    redis.call("LREM", listKey, -marks, "")
  end
  return found
end

-- Deletes jobs (`ids`, in that order) in whatever states hold them: out of that state (`places`,
-- the states to look in, each { key, name }), and out of the stalled set; each one's
-- deduplication id released as on removal; its hash and companion keys deleted; and a `removed`
-- event with the state it was in. What their parents record of them is the caller's to mend.
local function deleteJobs(prefix, ids, places, stalledKey, eventsKey, metaKey)
  local prev, inNoSet, unplaced = {}, {}, 0
  for _, id in ipairs(ids) do
    for _, place in ipairs(places) do
      local name = place[2]
      if name ~= "wait" and name ~= "paused" and name ~= "active"
          and redis.call("ZREM", place[1], id) == 1 then
        prev[id] = name
      end
    end
    if not prev[id] then
      inNoSet[id] = true
      unplaced = unplaced + 1
    end
  end
  for _, place in ipairs(places) do
    local name = place[2]
    if unplaced > 0 and (name == "wait" or name == "paused" or name == "active") then
      for id in pairs(takeFromList(place[1], inNoSet, unplaced)) do
        prev[id] = name
        inNoSet[id] = nil
        unplaced = unplaced - 1
      end
    end
  end
  for _, id in ipairs(ids) do
    redis.call("SREM", stalledKey, id)
    releaseDedupId(prefix, id, redis.call("HGET", prefix .. id, "deid") or nil)
    removeJobKeys(prefix, id)
    emitEvent(eventsKey, metaKey, "removed", id, "prev", prev[id] or "unknown")
  end
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
-- One call's share of a walk that removes a tree of jobs from the bottom up (removeJob-13 with
-- its children, removeUnprocessedChildren-10). A call reads at most `limit` + 1 jobs (the top
-- and `limit` below it) and takes at most `limit`, each only once every child of it is taken
-- or kept, so what a call leaves is still a tree: its next call starts again from the top.

-- Up to this many entries a record of children is read whole and sorted, whatever room the walk
-- has left: a small tree is walked in one order on every server. A larger record, when the
-- walk has less room than it holds, gives a sample of the room's size.
local SMALL_RECORD = 32

local RECORD_SIZE = { dependencies = "SCARD", processed = "HLEN", failed = "HLEN",
  unsuccessful = "ZCARD" }
local RECORD_DROP = { dependencies = "SREM", processed = "HDEL", failed = "HDEL",
  unsuccessful = "ZREM" }

-- The entries (children's job keys) of one of a job's records: all of them, or `n` (a sample).
local function recordEntries(recordKey, part, n)
  if n == 0 then
    return {}
  elseif part == "dependencies" then
    return n and redis.call("SRANDMEMBER", recordKey, n) or redis.call("SMEMBERS", recordKey)
  elseif part == "unsuccessful" then
    return redis.call("ZRANGE", recordKey, 0, n and n - 1 or -1)
  end
  return n and redis.call("HRANDFIELD", recordKey, n) or redis.call("HKEYS", recordKey)
end

-- The children of the job at `nodeKey` in its records `parts`, sorted, at most `room` of them;
-- `partOf` learns which record names each. A child is a job of this queue whose parentKey is the
-- node: an entry naming anything else (a child removed by its retention, an id used again) is
-- dropped from the record as the walk meets it, so that records of gone children do not hold a
-- removal back. Returns the children and whether they are all of them.
local function treeChildren(prefix, nodeKey, parts, room, partOf)
  local kids, whole = {}, true
  for _, part in ipairs(parts) do
    local recordKey = nodeKey .. ":" .. part
    local entries
    if redis.call(RECORD_SIZE[part], recordKey) <= math.max(room, SMALL_RECORD) then
      entries = recordEntries(recordKey, part)
    else
      entries = recordEntries(recordKey, part, room)
      whole = false
    end
    for _, childKey in ipairs(entries) do
      local childId = string.sub(childKey, #prefix + 1)
      -- pcall: an entry naming a key that is no hash answers an error, not a parentKey.
      if string.sub(childKey, 1, #prefix) == prefix and not string.find(childId, ":", 1, true)
          and redis.pcall("HGET", childKey, "parentKey") == nodeKey then
        kids[#kids + 1] = childKey
        partOf[childKey] = part
      else
        redis.call(RECORD_DROP[part], recordKey, childKey)
      end
    end
  end
  table.sort(kids)
  if #kids > room then
    for i = #kids, room + 1, -1 do
      kids[i] = nil
    end
    whole = false
  end
  return kids, whole
end

-- Moves the child `childKey` from the record `part` of its parent to the same record of the
-- tree's top, with its entry's value or score: a chain deeper than a call can walk is cut so.
local function moveUnderTop(topKey, parentKey, childKey, part)
  local from, to = parentKey .. ":" .. part, topKey .. ":" .. part
  if part == "dependencies" then
    redis.call("SMOVE", from, to, childKey)
  elseif part == "unsuccessful" then
    redis.call("ZADD", to, redis.call("ZSCORE", from, childKey), childKey)
    redis.call("ZREM", from, childKey)
  else
    redis.call("HSET", to, childKey, redis.call("HGET", from, childKey))
    redis.call("HDEL", from, childKey)
  end
  redis.call("HSET", childKey, "parentKey", topKey)
end

-- Walks the tree under the job `topId` depth first, children in the order of their keys, and
-- answers the jobs this call takes, each after its children (the top last, when `takeTop` and
-- the whole tree fits), and whether the walk is over (every job below the top taken or kept).
-- Each job taken below the top is already out of its parent's record: that parent goes later, or
-- in a later call, and stays where it is till then (a parent in waiting-children is not
-- released). `verdict(id)` rules on each job below the top as the walk reaches it: "take",
-- "keep" (it stays, with its children, and does not hold its parent back), or a reply code that
-- ends the call before anything is written. When nothing could be taken because a chain of
-- children runs deeper than the walk can go, the first child past the walk's reach is moved under
-- the top (the next call takes the chain above it), and the third answer is true: the call did
-- something.
local function treeBatch(prefix, topId, parts, limit, takeTop, verdict)
  local top = { id = topId }
  local frames, batch, partOf = { top }, {}, {}
  local visits, stuck, over = 0, nil, false
  while #frames > 0 do
    local frame = frames[#frames]
    if not frame.kids then
      visits = visits + 1
      local ruling = frame == top and "take" or verdict(frame.id)
      if type(ruling) == "number" then
        return ruling
      end
      frame.keep = ruling == "keep"
      frame.kids, frame.whole = {}, true
      if not frame.keep then
        frame.kids, frame.whole = treeChildren(prefix, prefix .. frame.id, parts,
          limit + 1 - visits, partOf)
      end
      frame.at, frame.done = 1, true
    end
    if frame.at <= #frame.kids and visits <= limit then
      frames[#frames + 1] = { id = string.sub(frame.kids[frame.at], #prefix + 1) }
      frame.at = frame.at + 1
    else
      frames[#frames] = nil
      local complete = frame.done and frame.whole and frame.at > #frame.kids
      if not complete and not stuck and frame ~= top then
        stuck = frame -- the first job the walk could not finish: the deepest of its first path
      end
      if complete and not frame.keep and (frame ~= top or takeTop) then
        if #batch < limit then
          batch[#batch + 1] = frame.id
        else
          complete = false
        end
      end
      if frame == top then
        over = complete
      elseif not complete then
        frames[#frames].done = false
      end
    end
  end
  for _, id in ipairs(batch) do
    if id ~= topId then
      local key = prefix .. id
      redis.call(RECORD_DROP[partOf[key]], redis.call("HGET", key, "parentKey") .. ":"
        .. partOf[key], key)
    end
  end
  if #batch > 0 or not stuck then
    return batch, over, false
  end
  local stuckKey = prefix .. stuck.id
  local childKey = stuck.kids[stuck.at]
  if not childKey then
    childKey = treeChildren(prefix, stuckKey, parts, 1, partOf)[1]
  end
  if childKey then
    moveUnderTop(prefix .. topId, stuckKey, childKey, partOf[childKey])
  end
  return batch, over, true
end

local waitKey, pausedKey, activeKey, delayedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local prioritizedKey, completedKey, failedKey, waitingChildrenKey = KEYS[5], KEYS[6], KEYS[7],
  KEYS[8]
local stalledKey, eventsKey, metaKey, schedulersKey, jobKey = KEYS[9], KEYS[10], KEYS[11],
  KEYS[12], KEYS[13]
local jobId, removeChildren = ARGV[1], ARGV[2] == "1"
local limit = intArg(ARGV[3], "limit", 1, 10000)

-- A runtime that builds the keys itself must build them for one queue and this id: the script
-- deletes by them.
local names = { "wait", "paused", "active", "delayed", "prioritized", "completed", "failed",
  "waiting-children", "stalled", "events", "meta", "repeat" }
local queueKeys = { waitKey, pausedKey, activeKey, delayedKey, prioritizedKey, completedKey,
  failedKey, waitingChildrenKey, stalledKey, eventsKey, metaKey, schedulersKey }
local prefix = checkQueueKeys(queueKeys, names)
if checkJobKey(jobKey, jobId, "") ~= prefix then -- the job's key, but in another queue
  error("key " .. jobKey .. " is not the key of job '" .. jobId .. "' in this queue")
end
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end

-- Refuses a job a scheduler moves on from (its current iteration, not finished: a finished one,
-- whose next was never scheduled, an upsert moves past) and a job a worker holds.
local function refused(id)
  if schedulerIteration(prefix, schedulersKey, id) and not redis.call("ZSCORE", completedKey, id)
      and not redis.call("ZSCORE", failedKey, id) then
    return -8
  end
  if redis.call("EXISTS", prefix .. id .. ":lock") == 1 then
    return 0
  end
end
local code = refused(jobId)
if code then
  return code
end
local parts = removeChildren and { "dependencies", "processed", "failed", "unsuccessful" } or {}
local batch = treeBatch(prefix, jobId, parts, limit, true,
  function(id) return refused(id) or "take" end)
if type(batch) == "number" then
  return batch -- a descendant refused: nothing written
end

local places = {}
for i = 1, 8 do
  places[i] = { queueKeys[i], names[i] } -- the eight states, in the keys' order
end
local parentKey = redis.call("HGET", jobKey, "parentKey") or nil
deleteJobs(prefix, batch, places, stalledKey, eventsKey, metaKey)
if batch[#batch] ~= jobId then -- taken, the job is last
  return 2 -- the job stays: a next call goes on with what this one left
end
-- The job, last: its parent outside the tree no longer waits for it, pending or failed.
leaveParent(prefix, jobKey, parentKey)
return 1
