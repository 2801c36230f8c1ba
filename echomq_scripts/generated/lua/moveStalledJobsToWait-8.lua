--- Recovers stalled jobs: active jobs whose worker stopped renewing the lock.
--- A job is stalled when it was active at the previous run of this script (which marks every
--- active job in the stalled set), no heartbeat cleared its mark since, and its lock is gone.
--- Below the maximum stalled count it goes back to wait (paused while the queue is paused), to the
--- front of the line, with its count incremented; past it, it fails like any failed job (metrics,
--- removeOnFail, its deduplication id released, its parent told by its policy as
--- moveToFinished-14 tells it). Every run is one atomic step, so several
--- workers may run it.
--- @key stalled  `emq:{q}:stalled`  the stalled set: the marks of the previous run
--- @key wait     `emq:{q}:wait`     the wait list
--- @key active   `emq:{q}:active`   the active list
--- @key failed   `emq:{q}:failed`   the failed set
--- @key paused   `emq:{q}:paused`   the paused list
--- @key meta     `emq:{q}:meta`     the queue's meta hash
--- @key events   `emq:{q}:events`   the event stream
--- @key marker   `emq:{q}:marker`   the marker idle workers block on
--- @arg max_stalled  int(0..)  how often a job may stall before it fails
--- @arg now          int(0..) = @now  the caller's clock, in milliseconds
--- @return StalledCheck(moved: list[string], failed: list[string])
---     the ids moved back to wait, and the ids failed
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
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait", "emq:{q}:7:lock"),
-- or nil when the key is not one of a queue's: job keys are built from it, so they carry the
-- queue's hash tag and land on its Cluster slot. The scripts that delete by the keys a runtime
-- passes check each against it.
local function queuePrefix(key)
  return string.match(key, "^(emq:{[^{}]*}:)")
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

local stalledKey, waitKey, activeKey, failedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local pausedKey, metaKey, eventsKey, markerKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
-- `now` is a number for sums; Redis gets the caller's text (nowText), which spares a conversion.
local nowText = ARGV[2]
local maxStalled, now = intArg(ARGV[1], "max_stalled", 0), nowArg(nowText)

local prefix = queuePrefix(stalledKey)
local paused = redis.call("HEXISTS", metaKey, "paused") == 1
local recovered, failed = {}, {}
for _, jobId in ipairs(redis.call("SMEMBERS", stalledKey)) do
  local jobKey = prefix .. jobId
  if redis.call("EXISTS", jobKey .. ":lock") == 0 and redis.call("LREM", activeKey, "-1", jobId) == 1 then
    local stalledCount = redis.call("HINCRBY", jobKey, "stc", "1")
    if stalledCount > maxStalled then
      local reason = "job stalled more than allowable limit"
      local stored = redis.call("HMGET", jobKey, "opts", "parentKey", "deid")
      local opts = jobOptions(stored[1])
      redis.call("HSET", jobKey, "failedReason", reason, "finishedOn", nowText)
      redis.call("ZADD", failedKey, nowText, jobId)
      countFinished(prefix .. "metrics:failed", 0, now)
      emitEvent(eventsKey, metaKey, "failed", jobId, "prev", "active", "reason", "stalled")
      finishDedupId(prefix, jobId, stored[3], nowText)
      failed[#failed + 1] = jobId
      applyRetention(failedKey, prefix, jobId, opts.removeOnFail, now)
      -- Its parent as a failure by moveToFinished-14 would: by the job's policy.
      if stored[2] then
        childFailed(prefix .. "waiting-children", jobId, stored[2], opts, reason, nowText)
      end
    else
      redis.call("RPUSH", paused and pausedKey or waitKey, jobId)
      emitEvent(eventsKey, metaKey, "stalled", jobId)
      recovered[#recovered + 1] = jobId
    end
  end
end
-- Mark every job active now; a heartbeat (extendLock) or a finish clears the mark.
redis.call("DEL", stalledKey)
local active = redis.call("LRANGE", activeKey, "0", "-1")
if #active > 0 then
  redis.call("SADD", stalledKey, unpack(active))
end
if #recovered > 0 and not paused then
  signalWork(markerKey, 0)
end
return { recovered, failed }
