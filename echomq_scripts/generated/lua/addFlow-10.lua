--- Adds a flow, a tree of jobs in one queue whose parents wait for their children: all or nothing.
--- Every node is checked before anything is written, so a failure code or a refused argument
--- adds none of it. A parent waits in waiting-children until its children are done.
--- The nodes come in pre-order, 8 values each: a node, then its children's subtrees. A node with
--- children goes to waiting-children, and its priority is the one it runs with once released; a
--- leaf goes to delayed with a delay (keeping its priority for when it is due), else to
--- prioritized with a priority, else to wait (paused while the queue is paused). With parent_id,
--- the root becomes a child of that existing job, as when an active job adds children.
--- A custom id that exists adds nothing (a `duplicated` event) and answers its id; the nodes below
--- it become its children, and a job without a parent joins the one the flow names for it. A
--- deduplication id still held adds nothing at that node or below it: the node answers the
--- holder's id, the nodes below it "".
--- @key wait              `emq:{q}:wait`              the wait list
--- @key paused            `emq:{q}:paused`            the paused list
--- @key delayed           `emq:{q}:delayed`           the delayed set, scored by run-at
--- @key prioritized       `emq:{q}:prioritized`       the prioritized set
--- @key pc                `emq:{q}:pc`                the counter that orders jobs of one priority
--- @key waiting_children  `emq:{q}:waiting-children`  the waiting-children set
--- @key meta              `emq:{q}:meta`              the queue's meta hash
--- @key id                `emq:{q}:id`                the counter of generated ids
--- @key events            `emq:{q}:events`            the event stream
--- @key marker            `emq:{q}:marker`            the marker idle workers block on
--- @arg now        int(0..) = @now  the caller's clock, in milliseconds
--- @arg parent_id  id? = ""  an existing job in this queue whose child the root becomes, or ""
--- @arg... node    bytes     per node: job_id ("" to generate one), name, data (JSON), opts (a
---     JSON object), dedup_id (or ""), delay (ms), priority (0 for none) and its number of children
--- @return list[Added(job_id: string, added: int)]
---     per node, in the order sent: its id, and 1 when it was added (0 when it existed or was
---     deduplicated)
--- @error -5 ParentJobNotExist
--- @error -7 ParentJobCannotBeReplaced
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

-- Refuses what a job may not be added with, before anything is written: an id that would make
-- its keys another's, options that are not a JSON object, two failure policies, or
-- deduplication options that do not fit. `customId` ("" for a generated id), `opts` (JSON),
-- `now` and `dedupId` ("" for none) as the add took them. Returns the deduplication options
-- (opts.deduplication, read: `ttl` in ms or nil, and `extend`, `replace`, `keepLastIfActive`,
-- each set by JSON true), or nil when the job has none.
local function checkJobArgs(customId, opts, now, dedupId)
  nowArg(now) -- stored, and added to sets, as the caller sent it
  if customId ~= "" then
    checkJobId(customId, "job id")
  end
  -- An object, not an array: cjson reads both as tables, so the text says which it is. The
  -- empty object, the common case, needs no decoding.
  if opts == "{}" then
    return nil
  end
  local ok, decoded = pcall(cjson.decode, opts)
  if not ok or type(decoded) ~= "table" or not string.match(opts, "^%s*{") then
    error("opts must be a JSON object")
  end
  -- A child has one policy for its parent: with two, which one holds would be a guess.
  local policies = 0
  for _, policy in ipairs({ "failParentOnFailure", "ignoreDependencyOnFailure",
      "removeDependencyOnFailure", "continueParentOnFailure" }) do
    if decoded[policy] == true then
      policies = policies + 1
    end
  end
  if policies > 1 then
    error("opts may set only one of failParentOnFailure, ignoreDependencyOnFailure, "
      .. "removeDependencyOnFailure and continueParentOnFailure")
  end
  local dedup = decoded.deduplication
  if dedup == nil or dedup == cjson.null then
    return nil
  end
  -- The id is the dedup_id argument alone; options without it would be ignored unseen.
  if type(dedup) ~= "table" then
    error("opts.deduplication must be an object")
  end
  if dedupId == "" then
    error("opts.deduplication needs a dedup_id")
  end
  if dedup.id ~= nil and dedup.id ~= dedupId then
    error("opts.deduplication.id must be the dedup_id, '" .. dedupId .. "', or absent")
  end
  local ttl = dedup.ttl
  if ttl == cjson.null or ttl == 0 then
    ttl = nil
  elseif type(ttl) == "number" then
    ttl = intArg(ttl, "opts.deduplication.ttl", 1)
  elseif ttl ~= nil then
    error("opts.deduplication.ttl must be a number of milliseconds, got " .. cjson.encode(ttl))
  end
  return {
    ttl = ttl, extend = dedup.extend == true, replace = dedup.replace == true,
    keepLastIfActive = dedup.keepLastIfActive == true,
  }
end
-- Writes a new job's hash, with `extraFields` (the script's own fields), and takes its
-- deduplication id (`dedupId`, "" for none) with `dedupKeyArgs`, what SET takes after the value
-- (a TTL, KEEPTTL, or nothing). A generated id skips the numbers custom ids took, and those in
-- `reserved` (a flow's custom ids, not written yet; nil for none). Returns the id.
local function createJob(idKey, prefix, customId, name, data, opts, now, dedupId, dedupKeyArgs,
    extraFields, reserved)
  local jobId = customId
  if jobId == "" then
    repeat
      -- "%d": tostring prints a Lua number as a float, which costs the server more.
      jobId = string.format("%d", redis.call("INCR", idKey))
    until redis.call("EXISTS", prefix .. jobId) == 0 and not (reserved and reserved[jobId])
  end
  local fields = {
    "name", name, "data", data, "opts", opts, "timestamp", now, "atm", "0", "stc", "0",
  }
  if dedupId ~= "" then
    redis.call("SET", prefix .. "de:" .. dedupId, jobId, unpack(dedupKeyArgs))
    fields[#fields + 1] = "deid"
    fields[#fields + 1] = dedupId
  end
  for _, value in ipairs(extraFields) do
    fields[#fields + 1] = value
  end
  redis.call("HSET", prefix .. jobId, unpack(fields))
  return jobId
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
-- Whether a job's options (the JSON its add stored) set lifo to JSON true: a job that goes to
-- wait goes where workers take it next. Options that never name it, the common case, are not
-- decoded; the decode is its own, not jobOptions', so that an add that includes this pays for no
-- other function (each costs every call a closure, make bench).
local function lifoOption(opts)
  if opts == nil or not string.find(opts, '"lifo"', 1, true) then
    return false
  end
  local ok, decoded = pcall(cjson.decode, opts)
  return ok and type(decoded) == "table" and decoded.lifo == true
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

-- Puts a job just created where an add puts it, with the add's event: to delayed when it is due
-- at `runAt` (nil for now; `delay` the ms it was given), workers woken for then, else to
-- prioritized with a `priority`, else to wait, or paused while the queue is `paused`: at the
-- head, or where workers take next when its options (`opts`, JSON) set lifo. `keys` are the
-- queue's wait, paused, delayed, prioritized, pc, marker, events and meta keys, in that order.
local function enqueueNewJob(keys, jobId, name, delay, runAt, priority, paused, opts)
  local markerKey, eventsKey, metaKey = keys[6], keys[7], keys[8]
  if runAt then
    redis.call("ZADD", keys[3], runAt, jobId)
    signalWork(markerKey, runAt)
    emitEvent(eventsKey, metaKey, "delayed", jobId, "delay", delay, "runAt", runAt)
  elseif priority > 0 then
    pushPrioritized(keys[4], keys[5], markerKey, paused, jobId, priority)
    emitEvent(eventsKey, metaKey, "prioritized", jobId, "priority", priority)
  else
    local state = pushReady(keys[1], keys[2], markerKey, paused, jobId, lifoOption(opts))
    emitEvent(eventsKey, metaKey, state == "paused" and "paused" or "waiting", jobId, "name", name)
  end
end
-- A job's options, from the JSON its add stored: always a table, whatever was stored, so a
-- script can read them before it writes anything. JSON null reads as absent.
local function jobOptions(raw)
  if raw == "{}" or raw == nil then
    return {} -- the common case, without decoding
  end
  local ok, decoded = pcall(cjson.decode, raw)
  if not ok or type(decoded) ~= "table" then
    return {}
  end
  for name, value in pairs(decoded) do
    if value == cjson.null then
      decoded[name] = nil
    end
  end
  return decoded
end
-- Deletes a job's hash and its companion keys: its lock, its logs, and a parent's :dependencies,
-- :processed, :failed (ignored children) and :unsuccessful (failed children).
local function removeJobKeys(prefix, jobId)
  local jobKey = prefix .. jobId
  redis.call("DEL", jobKey, jobKey .. ":lock", jobKey .. ":logs", jobKey .. ":dependencies",
    jobKey .. ":processed", jobKey .. ":failed", jobKey .. ":unsuccessful")
end

-- Applies removeOnComplete / removeOnFail to a finished set: true removes the job that just
-- finished, a number N >= 0 keeps the newest N (a negative N keeps all, as -1 does in BullMQ),
-- { age = seconds, count = N, limit = L } drops jobs older than `age`, oldest first, then keeps at
-- most N, removing at most L jobs in all (1000 when not given): a queue that had no rule, or a
-- far larger count, sheds its backlog L jobs a finish, and no call walks the whole set. Removed
-- jobs lose their hash and their companion keys. Returns true when the job that just finished
-- was removed.
local function applyRetention(finishedKey, prefix, jobId, rule, now)
  if rule == true then
    redis.call("ZREM", finishedKey, jobId)
    removeJobKeys(prefix, jobId)
    return true
  end
  if type(rule) ~= "number" and type(rule) ~= "table" then
    return false
  end
  -- Anything but a number counts as not given: a bad rule must not fail a finished job. So do a
  -- negative count (keep all), a negative age and a limit below 1.
  local keep = tonumber(type(rule) == "number" and rule or rule.count)
  keep = keep and keep >= 0 and math.floor(keep) or nil
  local age = type(rule) == "table" and tonumber(rule.age) or nil
  local limit = type(rule) == "table" and tonumber(rule.limit) or nil
  limit = limit and limit >= 1 and math.floor(limit) or 1000
  local removedOwn = false
  local function drop(ids)
    for _, id in ipairs(ids) do
      redis.call("ZREM", finishedKey, id)
      removeJobKeys(prefix, id)
      removedOwn = removedOwn or id == jobId
    end
    return #ids
  end
  if age and age >= 0 then
    limit = limit - drop(redis.call("ZRANGEBYSCORE", finishedKey, "-inf", now - age * 1000,
      "LIMIT", "0", limit))
  end
  if keep and limit > 0 then
    local excess = math.min(redis.call("ZCARD", finishedKey) - keep, limit)
    if excess > 0 then
      drop(redis.call("ZRANGE", finishedKey, "0", excess - 1))
    end
  end
  return removedOwn
end
-- Counts a job that finished (completed, or failed for good) in its outcome's metrics hash
-- `metricsKey` (`emq:{q}:metrics:<outcome>`): "count" goes up by one. With `keep` above 0 it also
-- keeps the per-minute series, the list `<metricsKey>:data`, newest minute first, at most `keep`
-- points: the first finish of a later minute than "prevTS" (the minute of the last point)
-- pushes how many finished in that minute, "count" then less "prevCount", and a 0 for each
-- minute after it in which none did, so a queue that finishes nothing writes nothing.
local function countFinished(metricsKey, keep, now)
  local count = redis.call("HINCRBY", metricsKey, "count", "1")
  if keep == 0 then
    return
  end
  local last = redis.call("HMGET", metricsKey, "prevTS", "prevCount")
  local before = string.format("%d", count - 1) -- the jobs that finished before this one
  local lastAt = tonumber(last[1])
  if not lastAt then
    -- The series starts in this minute, with this job.
    redis.call("HSET", metricsKey, "prevTS", string.format("%d", now), "prevCount", before)
    return
  end
  local minutes = math.floor(now / 60000) - math.floor(lastAt / 60000)
  if minutes <= 0 then
    return
  end
  local dataKey = metricsKey .. ":data"
  redis.call("LPUSH", dataKey, string.format("%d", count - 1 - (tonumber(last[2]) or 0)))
  -- The quiet minutes, at most the series' length, in batches: unpack has a stack limit.
  local quiet = math.min(minutes, keep) - 1
  while quiet > 0 do
    local zeros = {}
    for i = 1, math.min(quiet, 1000) do
      zeros[i] = "0"
    end
    redis.call("LPUSH", dataKey, unpack(zeros))
    quiet = quiet - #zeros
  end
  redis.call("LTRIM", dataKey, "0", string.format("%d", keep - 1))
  redis.call("HSET", metricsKey, "prevTS", string.format("%d", now), "prevCount", before)
end
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait", "emq:{q}:7:lock"),
-- or nil when the key is not one of a queue's: job keys are built from it, so they carry the
-- queue's hash tag and land on its Cluster slot. The scripts that delete by the keys a runtime
-- passes check each against it.
local function queuePrefix(key)
  return string.match(key, "^(emq:{[^{}]*}:)")
end

-- What a job that finishes (completed, or failed for good) at `now` does to the deduplication id
-- it took (`dedupId`, its "deid" field, or nil), while it still holds it. An add deduplicated
-- while the job was active, with keepLastIfActive (deduplicate keeps the last one in
-- `dn:<dedupId>`), is added now, with the job's own custom id when it had one and that id is
-- free (else nothing is added: a `duplicated` event), and holds the id in its turn. Otherwise the
-- id is released, unless a TTL still runs on it: then it lapses with the TTL, as the add asked.
local function finishDedupId(prefix, jobId, dedupId, now)
  if not dedupId then
    return
  end
  local key = prefix .. "de:" .. dedupId
  if redis.call("GET", key) ~= jobId then
    return
  end
  local nextKey = prefix .. "dn:" .. dedupId
  local kept = redis.call("HMGET", nextKey, "name", "data", "opts", "jid", "delay", "priority")
  if kept[1] then
    redis.call("DEL", nextKey)
    local customId = kept[4] or ""
    if customId ~= "" and redis.call("EXISTS", prefix .. customId) == 1 then
      -- Taken meanwhile: nothing is added, as an add of that id would add nothing.
      emitEvent(prefix .. "events", prefix .. "meta", "duplicated", customId)
    else
      local delay, priority = tonumber(kept[5]) or 0, tonumber(kept[6]) or 0
      local fields = {}
      if kept[5] then -- addDelayedJob's add, a delay of 0 too: to delayed, as that add went
        fields[#fields + 1], fields[#fields + 2] = "delay", kept[5]
      end
      if priority > 0 then
        fields[#fields + 1], fields[#fields + 2] = "priority", kept[6]
      end
      local id = createJob(prefix .. "id", prefix, customId, kept[1], kept[2], kept[3], now, dedupId,
        {}, fields, nil)
      -- Past 2^53 - 1 a score is not exact: the add was checked at its own time, not this one.
      local runAt = math.min(tonumber(now) + delay, 9007199254740991)
      local keys = {}
      for _, name in ipairs({ "wait", "paused", "delayed", "prioritized", "pc", "marker", "events",
          "meta" }) do
        keys[#keys + 1] = prefix .. name
      end
      enqueueNewJob(keys, id, kept[1], delay, kept[5] and runAt or nil, priority,
        redis.call("HEXISTS", prefix .. "meta", "paused") == 1, kept[3])
      return
    end
  end
  if redis.call("PTTL", key) == -1 then
    redis.call("DEL", key)
  end
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

-- What a child's failure for good does to its parent (`parentKey`, the child's "parentKey"
-- field), by the policy of the child's options (`opts`, read with jobOptions; a policy is set
-- when its value is JSON true):
-- - ignoreDependencyOnFailure: the child's `reason` goes to the parent's :failed, and the parent
--   goes on once no other child holds it;
-- - continueParentOnFailure: the same record, and the parent goes on at once;
-- - removeDependencyOnFailure: the dependency is dropped, and the parent goes on once no other
--   child holds it;
-- - failParentOnFailure: the child goes to the parent's :unsuccessful and a parent waiting for its
--   children fails, naming the child; its own policy then applies to its own parent, and so on up
--   the tree (a loop, not a recursion: a tree of any depth);
-- - none: the child goes to the parent's :unsuccessful and the parent stays; completing it answers
--   -9 (JobHasFailedChildren).
-- A parent that does not count the child as pending any more (removed, or the dependency removed)
-- is left alone.
local function childFailed(waitingChildrenKey, childId, parentKey, opts, reason, nowText)
  local prefix = queuePrefix(waitingChildrenKey)
  while parentKey do
    local childKey = prefix .. childId
    if redis.call("SREM", parentKey .. ":dependencies", childKey) == 0 then
      return
    end
    local parentId = string.sub(parentKey, #prefix + 1)
    if opts.ignoreDependencyOnFailure == true or opts.continueParentOnFailure == true then
      redis.call("HSET", parentKey .. ":failed", childKey, reason)
      releaseParent(waitingChildrenKey, parentId, opts.continueParentOnFailure ~= true)
      return
    end
    if opts.removeDependencyOnFailure == true then
      releaseParent(waitingChildrenKey, parentId, true)
      return
    end
    redis.call("ZADD", parentKey .. ":unsuccessful", nowText, childKey)
    if opts.failParentOnFailure ~= true
        or redis.call("ZREM", waitingChildrenKey, parentId) == 0 then
      return
    end
    -- The parent fails as a job does that has no attempt left: counted, its deduplication id
    -- released, its removeOnFail applied.
    local stored = redis.call("HMGET", parentKey, "opts", "parentKey", "deid")
    reason = "child " .. childKey .. " failed"
    redis.call("HSET", parentKey, "failedReason", reason, "finishedOn", nowText)
    redis.call("ZADD", prefix .. "failed", nowText, parentId)
    countFinished(prefix .. "metrics:failed", 0, tonumber(nowText))
    emitEvent(prefix .. "events", prefix .. "meta", "failed", parentId, "prev", "waiting-children")
    finishDedupId(prefix, parentId, stored[3], nowText)
    opts = jobOptions(stored[1])
    applyRetention(prefix .. "failed", prefix, parentId, opts.removeOnFail, tonumber(nowText))
    childId, parentKey = parentId, stored[2]
  end
end

-- A job that existed without a (live) parent and was named in a flow below `parentKey` (addFlow
-- has recorded it there, and in the parent's :dependencies, and checked that no cycle comes of
-- it) finishes joining it as if it had been added with it, by what addFlow read of it before its
-- first write: `finished` "completed" with `result` its return value, which goes to the parent's
-- :processed, the parent going on if that was the last child; "failed" with `result` its reason
-- and `opts` its options, whose policy is applied (childFailed) as if it had failed now; nil
-- when it has not finished, and stays pending. What is read before is what counts: a parent
-- that an earlier joiner failed may have removed this job by its retention since.
local function joinParent(waitingChildrenKey, prefix, jobId, parentKey, finished, result, opts,
    now)
  if finished == "completed" then
    -- An earlier child's failure may have failed the parent, and its retention removed it.
    if redis.call("SREM", parentKey .. ":dependencies", prefix .. jobId) == 1 then
      redis.call("HSET", parentKey .. ":processed", prefix .. jobId, result)
      releaseParent(waitingChildrenKey, string.sub(parentKey, #prefix + 1), true)
    end
  elseif finished == "failed" then
    childFailed(waitingChildrenKey, jobId, parentKey, opts, result, now)
  end
end

-- When a job delayed `delay` ms (a checked integer, named `name` in the error) from `now` (the
-- caller's clock, as sent) becomes due. Refused past 2^53 - 1: beyond it a Lua number, and a
-- sorted set's score, no longer holds every integer, so the job would be due at another time
-- than the one asked for. The sum of two numbers up to 2^53 - 1 that is over it rounds to a
-- number over it too, so the comparison is exact.
local function runAtArg(now, delay, name)
  local runAt = nowArg(now) + delay
  if runAt > 9007199254740991 then
    error(name .. " must end by 2^53 - 1 ms, got now " .. now .. " + " .. name .. " "
      .. string.format("%d", delay))
  end
  return runAt
end

local waitKey, pausedKey, delayedKey, prioritizedKey, pcKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4],
  KEYS[5]
local waitingChildrenKey, metaKey, idKey, eventsKey, markerKey = KEYS[6], KEYS[7], KEYS[8],
  KEYS[9], KEYS[10]
local now, rootParentId = ARGV[1], ARGV[2]
local prefix = queuePrefix(idKey)
local FIELDS = 8

-- 1. Every node's arguments, and the tree they describe.
local count = (#ARGV - 2) / FIELDS
if count < 1 or count % 1 ~= 0 then
  error("a flow is one or more nodes of 8 values each (job_id, name, data, opts, dedup_id, "
    .. "delay, priority, children), got " .. (#ARGV - 2) .. " values")
end
local nodes = {}
local byCustomId = {} -- a custom id -> its node's index
local owed = {} -- the nodes still owed children, innermost last: { index, how many }
for i = 1, count do
  local at = 2 + (i - 1) * FIELDS
  local node = {
    customId = ARGV[at + 1], name = ARGV[at + 2], data = ARGV[at + 3], opts = ARGV[at + 4],
    dedupId = ARGV[at + 5],
    delay = intArg(ARGV[at + 6], "node " .. i .. "'s delay", 0),
    priority = intArg(ARGV[at + 7], "node " .. i .. "'s priority", 0, 2097151),
    children = intArg(ARGV[at + 8], "node " .. i .. "'s children", 0),
  }
  node.dedup = checkJobArgs(node.customId, node.opts, now, node.dedupId)
  if node.dedup and (node.dedup.replace or node.dedup.keepLastIfActive) then
    error("node " .. i .. ": a flow's job takes no opts.deduplication.replace or "
      .. "keepLastIfActive: what it would replace, or keep, has a parent of its own")
  end
  if node.children > 0 and node.delay > 0 then
    error("node " .. i .. " has children and a delay: a parent runs when its children are done")
  end
  if node.delay > 0 then
    node.runAt = runAtArg(now, node.delay, "node " .. i .. "'s delay")
  end
  if node.customId ~= "" then
    if byCustomId[node.customId] then
      error("job id '" .. node.customId .. "' is in the flow twice")
    end
    byCustomId[node.customId] = i
    node.key = prefix .. node.customId
  end
  if i > 1 then
    local open = owed[#owed]
    if not open then
      error("node " .. i .. " is past the end of the tree the children counts describe")
    end
    node.parent = open[1]
    open[2] = open[2] - 1
    if open[2] == 0 then
      owed[#owed] = nil
    end
  end
  if node.children > 0 then
    owed[#owed + 1] = { i, node.children }
  end
  nodes[i] = node
end
if #owed > 0 then
  error("the children counts describe more nodes than the " .. count .. " sent")
end

-- 2. What the flow meets in Redis: the root's parent, deduplication ids still held, custom ids
-- that exist, and whose child each of those already is. A parent is one that exists: a
-- parentKey naming a job that is gone (removed by retention) counts as none.
local rootParentKey = nil
if rootParentId ~= "" then
  checkJobId(rootParentId, "parent id")
  rootParentKey = prefix .. rootParentId
  if redis.call("EXISTS", rootParentKey) == 0 then
    return -5
  end
end
local taken = {} -- the deduplication ids this flow takes
for _, node in ipairs(nodes) do
  local above = nodes[node.parent]
  if above and above.skipped then
    node.skipped = "above"
  elseif node.dedupId ~= "" and (taken[node.dedupId]
      or redis.call("EXISTS", prefix .. "de:" .. node.dedupId) == 1) then
    node.skipped = "deduplicated"
  elseif node.key and redis.call("EXISTS", node.key) == 1 then
    node.exists = true
    local stored = redis.call("HMGET", node.key, "parentKey", "returnvalue", "failedReason", "opts",
      "rjk")
    node.storedParent = stored[1] or nil
    if above or rootParentKey then
      -- The parent the flow names for it: nil when that one is a new job without a custom id.
      local named = rootParentKey
      if above then
        named = above.key
      end
      if stored[5] then
        -- A job scheduler's iteration is the scheduler's: it joins no flow.
        return -8
      elseif not node.storedParent or redis.call("EXISTS", node.storedParent) == 0 then
        -- It joins. What it finished with is read now: once the writes begin, a parent that a
        -- failed joiner fails may remove it by its retention before its own turn comes.
        node.joins = true
        if redis.call("ZSCORE", prefix .. "completed", node.customId) then
          node.finished, node.result = "completed", stored[2] or ""
        elseif redis.call("ZSCORE", prefix .. "failed", node.customId) then
          node.finished, node.result = "failed", stored[3] or ""
          node.options = jobOptions(stored[4])
        end
      elseif node.storedParent ~= named then
        return -7
      end
    end
  elseif node.dedupId ~= "" then
    -- Taken by a new job only: an add that meets an existing custom id takes nothing, as alone.
    taken[node.dedupId] = true
  end
end

-- A job's parent once the flow is in: a node (an index) or a job key, or neither.
local function parentAfter(i)
  local node = nodes[i]
  if node.exists and not node.joins then
    return nil, node.storedParent
  end
  if node.parent then
    return node.parent, nil
  end
  return nil, rootParentKey
end

-- An existing job that joins would wait for itself if it is above its new parent. Its ancestors
-- are followed as they will be once the flow is in: through the flow's nodes, and through the
-- parentKey fields of jobs outside it. A loop that does not pass through the joiner (parentKeys
-- that a removed parent left) is not one it makes: the walk stops there.
for i, node in ipairs(nodes) do
  if node.joins then
    local index, ancestor = parentAfter(i)
    local seen = {}
    while index or ancestor do
      if index then
        index, ancestor = parentAfter(index)
      elseif ancestor == node.key then
        error("job '" .. node.customId .. "' cannot be a child of its own descendant or of "
          .. "itself")
      elseif seen[ancestor] then
        break
      else
        seen[ancestor] = true
        -- A parentKey is a job key of this queue: the flow's node by the id it names.
        local at = byCustomId[string.sub(ancestor, #prefix + 1)]
        if at and not nodes[at].skipped then
          index, ancestor = parentAfter(at)
        else
          ancestor = redis.call("HGET", ancestor, "parentKey") or nil
        end
      end
    end
  end
end

-- 3. The writes.
local paused = redis.call("HEXISTS", metaKey, "paused") == 1
local placeKeys = { waitKey, pausedKey, delayedKey, prioritizedKey, pcKey, markerKey, eventsKey,
  metaKey }
local replies = {}
local joiners = {}
local parents = {}
for i, node in ipairs(nodes) do
  local above = nodes[node.parent]
  local parentKey = rootParentKey
  if above then
    parentKey = above.key -- written by now, unless skipped, and then so is this node
  end
  if node.skipped == "above" then
    replies[i] = { "", 0 }
  elseif node.skipped then
    local dedupKey = prefix .. "de:" .. node.dedupId
    local holder = redis.call("GET", dedupKey)
    -- As deduplicate's extend: only a TTL that runs starts again.
    if node.dedup and node.dedup.ttl and node.dedup.extend
        and redis.call("PTTL", dedupKey) > 0 then
      redis.call("SET", dedupKey, holder, "PX", node.dedup.ttl)
    end
    emitEvent(eventsKey, metaKey, "deduplicated", holder, "deduplicationId", node.dedupId,
      "deduplicatedJobId", node.customId)
    replies[i] = { holder, 0 }
  elseif node.exists then
    emitEvent(eventsKey, metaKey, "duplicated", node.customId)
    if node.joins then
      redis.call("HSET", node.key, "parentKey", parentKey)
      redis.call("SADD", parentKey .. ":dependencies", node.key)
      redis.call("HSET", parentKey, "deps", "1")
      joiners[#joiners + 1] = { node, parentKey }
    end
    replies[i] = { node.customId, 0 }
  else
    local fields = {}
    if node.delay > 0 then
      fields[#fields + 1], fields[#fields + 2] = "delay", node.delay
    end
    if node.priority > 0 then
      fields[#fields + 1], fields[#fields + 2] = "priority", node.priority
    end
    if parentKey then
      fields[#fields + 1], fields[#fields + 2] = "parentKey", parentKey
    end
    local ttl = node.dedup and node.dedup.ttl
    local id = createJob(idKey, prefix, node.customId, node.name, node.data, node.opts, now,
      node.dedupId, ttl and { "PX", ttl } or {}, fields, byCustomId)
    node.key = prefix .. id
    if parentKey then
      redis.call("SADD", parentKey .. ":dependencies", node.key)
      -- Marks the parent, so that finishing a job that never had a child reads no set (-4).
      redis.call("HSET", parentKey, "deps", "1")
    end
    if node.children > 0 then
      redis.call("ZADD", waitingChildrenKey, now, id)
      emitEvent(eventsKey, metaKey, "waiting-children", id)
      parents[#parents + 1] = id
    else
      enqueueNewJob(placeKeys, id, node.name, node.delay, node.runAt, node.priority, paused,
        node.opts)
    end
    replies[i] = { id, 1 }
  end
end

-- 4. Last, once every dependency is recorded: the jobs that joined and had finished count as
-- finished now, and a new parent none of whose children is pending (all finished, or all
-- deduplicated) goes on at once.
for _, joiner in ipairs(joiners) do
  local node = joiner[1]
  joinParent(waitingChildrenKey, prefix, node.customId, joiner[2], node.finished, node.result,
    node.options, now)
end
for _, parentId in ipairs(parents) do
  releaseParent(waitingChildrenKey, parentId, true)
end
return replies
