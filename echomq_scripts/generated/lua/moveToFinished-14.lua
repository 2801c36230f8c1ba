--- Completes or fails an active job, and optionally picks the next one up in the same call.
--- Verifies the lock token first, then that the job exists, has no pending and no failed children
--- (to complete) and is active. A completion stores the return value; a failure stores the reason
--- and stack trace and, while attempts are left, goes back to wait (no backoff) or to delayed
--- (a backoff) instead of to failed. A finished job is scored by its finish time, counted in the
--- metrics, kept or removed by removeOnComplete / removeOnFail, and releases its deduplication id. A completed child's value
--- goes to its parent, and the last pending one moves the parent out of waiting-children; a child
--- that fails for good acts on its parent by its policy (failParentOnFailure,
--- ignoreDependencyOnFailure, removeDependencyOnFailure, continueParentOnFailure; none: the parent
--- keeps waiting and cannot complete). Re-sent after it landed, the call answers where the job went
--- and, with fetch_next, the job the first call picked (the one the token holds), if any.
--- @key wait              `emq:{q}:wait`              the wait list
--- @key active            `emq:{q}:active`            the active list
--- @key prioritized       `emq:{q}:prioritized`       the prioritized set
--- @key events            `emq:{q}:events`            the event stream
--- @key stalled           `emq:{q}:stalled`           the stalled set
--- @key limiter           `emq:{q}:limiter`           the rate limiter's counter
--- @key delayed           `emq:{q}:delayed`           the delayed set, scored by run-at
--- @key paused            `emq:{q}:paused`            the paused list
--- @key meta              `emq:{q}:meta`              the queue's meta hash
--- @key pc                `emq:{q}:pc`                the counter that orders jobs of one priority
--- @key marker            `emq:{q}:marker`            the marker idle workers block on
--- @key finished          `emq:{q}:<outcome>`         the completed or the failed set
--- @key metrics           `emq:{q}:metrics:<outcome>` the metrics of completed or of failed jobs
--- @key waiting_children  `emq:{q}:waiting-children`  the waiting-children set
--- @arg job_id          id                      the job's id
--- @arg token           string(non-empty)       the worker's lock token
--- @arg now             int(0..) = @now         the caller's clock, in milliseconds
--- @arg outcome         enum(completed|failed)  how the job ended
--- @arg result          string                  the return value (JSON) or the failure reason
--- @arg stacktrace      string = ""             the failure's stack trace, or ""
--- @arg jitter          number(0..<1) = 0       the random draw for a backoff with a jitter
--- @arg fetch_next      bool = false            pick the next job up for the same token
--- @arg lock_duration   int(1..) = 30000        the next job's lock time to live, in milliseconds
--- @arg limit_max       int(0..) = 0            as moveToActive-11's
--- @arg limit_duration  int(0..) = 0            as moveToActive-11's
--- @arg concurrency     int(0..) = 0            as moveToActive-11's
--- @arg max_metrics     int(0..) = 0            keep this many per-minute points of the metrics
---     series (0: only the count)
--- @arg backoff_delay   int(0..) = 0            the retry delay the caller computed, for a backoff
---     of a type other than fixed and exponential
--- @return Finished(moved_to: string, job_id: string, fields: hash, limit_delay: int)  where
---     the job went ("completed", "failed", "delayed" or, retried without a delay, "waiting"),
---     then the next job as moveToActive answers it, for the same token
--- @error -1 JobNotExist
--- @error -2 JobLockNotExist
--- @error -3 JobNotInState
--- @error -4 JobPendingChildren
--- @error -6 JobLockMismatch
--- @error -9 JobHasFailedChildren
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
-- The retry delay, in ms, of a job that failed its `attempt`-th attempt, by its `backoff` option:
-- - a number: that delay every time ("fixed");
-- - an object: `delay`, and `type` "fixed" (`delay` every time), "exponential" or none
--   (`delay * 2^(attempt - 1)`), or any other type: `custom`, the delay the caller computed with
--   its own strategy. With `jitter` (a share from 0 to 1), the delay is drawn from
--   [d * (1 - jitter), d]: d * (1 - jitter) + d * jitter * draw, `draw` the caller's fraction in
--   [0, 1) (math.random is not random inside Redis);
-- - anything else: 0.
local function backoffDelay(backoff, attempt, draw, custom)
  if type(backoff) == "number" then
    return math.max(math.floor(backoff), 0)
  end
  if type(backoff) ~= "table" then
    return 0
  end
  local kind = backoff.type
  local delay = tonumber(backoff.delay) or 0
  if kind == "exponential" or kind == nil then
    delay = delay * 2 ^ (attempt - 1)
  elseif kind ~= "fixed" then
    return custom
  end
  local share = tonumber(backoff.jitter) or 0
  if share > 0 then
    share = math.min(share, 1)
    delay = delay * (1 - share) + delay * share * draw
  end
  return math.max(math.floor(delay), 0)
end
-- Checks that `token` holds the job's lock: 0 when it does, else the failure code (-2 when the
-- lock is gone, -6 when another worker holds it).
local function checkLock(lockKey, token)
  local holder = redis.call("GET", lockKey)
  if not holder then
    return -2
  end
  if holder ~= token then
    return -6
  end
  return 0
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
-- A fraction argument: a number from 0 up to, not including, 1.
local function fractionArg(value, name)
  local number = tonumber(value)
  if not number or not (number >= 0 and number < 1) then
    error(name .. " must be a number from 0 up to 1 (not 1 itself), got '" .. tostring(value) .. "'")
  end
  return number
end
-- A lock token names one pickup: a worker draws a new token for every moveToActive, and a finish
-- with fetch_next hands its token on to the job it picks next. The token's record, the key this
-- returns (emq:{q}:token:<token>), says which job the token holds and what its last finish
-- answered: "<held>", or "<held>:<finished>:<answer>" once it finished the job <finished> (<held>
-- is then the job a fetch-next pickup took, or empty; <answer> is where the job went, or the delay
-- of a moveToDelayed). The pickup sets it with the lock and for as long (recordToken), extendLock
-- renews both, and a finish rewrites it keeping its time to live (recordFinish), so a call a
-- client re-sends after losing the reply can be told from a new one (tokenRecord). Job ids hold
-- no ":", so the record splits at its colons.
local function tokenKey(prefix, token)
  return prefix .. "token:" .. token
end

-- The token's record (see tokenKey) as (the job it holds or held last, the job it finished or "",
-- that finish's answer or ""), or nil when the token has no record.
local function tokenRecord(prefix, token)
  local record = redis.call("GET", tokenKey(prefix, token))
  if not record then
    return nil
  end
  return string.match(record, "^([^:]*):?([^:]*):?(.*)$")
end

-- The job `token` holds now: the one its record names, while that job's lock holds the token.
local function heldJob(prefix, token)
  local held = tokenRecord(prefix, token)
  if held and held ~= "" and redis.call("GET", prefix .. held .. ":lock") == token then
    return held
  end
  return nil
end

-- What the finish of `jobId` by `token` answered, when one landed: the answer to the same call
-- re-sent. The token's record says so while it lives, also after the job was removed by
-- retention or finished again by another token.
local function landedFinish(prefix, jobId, token)
  local _, finished, answer = tokenRecord(prefix, token)
  if finished == jobId then
    return answer
  end
  return nil
end

-- The caller's clock, in ms: decimal digits, as Redis reads it. Returns the number.
local function nowArg(value)
  return digitsArg(value, "now", 0)
end

-- Moves every delayed job that is due by `now` (the caller's clock as it sent it, see pickup) to
-- where it can run: at most 1000 per call, so one call stays short however many are due.
-- Not through includes/promoteJob.lua, the promotion by hand: a due job keeps its last delay,
-- and each included function costs every pickup a closure (docs/benchmarks.md).
local function promoteDueJobs(delayedKey, waitKey, pausedKey, prioritizedKey, pcKey, markerKey,
    eventsKey, metaKey, prefix, now, paused)
  local due = redis.call("ZRANGEBYSCORE", delayedKey, "-inf", now, "LIMIT", "0", "1000")
  for _, jobId in ipairs(due) do
    redis.call("ZREM", delayedKey, jobId)
    local state = enqueueReadyJob(waitKey, pausedKey, prioritizedKey, pcKey, markerKey, prefix,
      jobId, paused)
    emitEvent(eventsKey, metaKey, state == "paused" and "paused" or "waiting", jobId,
      "prev", "delayed")
  end
end

-- Sets the marker (see signalWork) from the queue's state after a pickup took a job or found
-- none: 0 while ready work remains, else the next delayed job's run-at, else no marker.
local function refreshMarker(markerKey, waitKey, prioritizedKey, delayedKey, paused)
  if not paused and (redis.call("LLEN", waitKey) > 0 or redis.call("ZCARD", prioritizedKey) > 0) then
    signalWork(markerKey, 0)
    return
  end
  local nextDelayed = redis.call("ZRANGE", delayedKey, "0", "0", "WITHSCORES")
  if nextDelayed[2] then
    redis.call("ZADD", markerKey, nextDelayed[2], "next")
  else
    redis.call("DEL", markerKey)
  end
end

-- Sets the token's record (see tokenKey): it holds `held`, and, when `finished` is given, it
-- finished that job first with `answer`. It lives `ttl` ms, as long as the lock it goes with.
local function recordToken(prefix, token, held, finished, answer, ttl)
  local record = finished and (held .. ":" .. finished .. ":" .. answer) or held
  redis.call("SET", tokenKey(prefix, token), record, "PX", ttl)
end
-- Appends an event without trimming the stream: for a pickup's `active` event, which the job's
-- finish (or the next add) follows with a trim. Reading the limit and trimming cost the server
-- more than the rest of a pickup's event (make bench); BullMQ's pickup does not trim either.
local function emitUntrimmedEvent(eventsKey, event, jobId, ...)
  redis.call("XADD", eventsKey, "*", "event", event, "jobId", jobId, ...)
end

-- The pickup shared by moveToActive and moveToFinished's fetch-next: promote due delayed jobs,
-- respect the pause, the rate limiter (at most `limitMax` jobs per `limitDuration` ms) and the
-- concurrency cap, each as the queue's meta sets it or else as the caller asks, take the next job (wait first, else the best priority, FIFO within it), lock
-- it for `token`, record that the token holds it (`finished` and `answer`: the job the same call
-- finished first and where it went, or nil), make it active. Returns { jobId, fields, limitedFor }:
-- the job, or "" and {} and the milliseconds until the limiter allows another job (0 when there is
-- nothing to do now).
-- The keys come first, in the order of the two scripts' KEYS (which share them), as parameters:
-- a table of them, built on every call, cost the server more than some of the calls it names
-- (make bench). `settings` is the caller's `HGETALL meta`: whether the queue is paused, and the
-- queue's own limits, which every worker of every runtime obeys (setGlobalRateLimit-1,
-- setGlobalConcurrency-1). The hash is small, and reading it whole cost the server less than an
-- HMGET of the four fields (make bench). `now` and `lockDuration` are the caller's text as it sent it: Redis reads them,
-- and a Lua number handed to redis.call costs a conversion to text (Redis 7.0 prints it with
-- "%.17g"), so numbers go as text where they can.
local function pickup(waitKey, activeKey, prioritizedKey, eventsKey, limiterKey, delayedKey,
    pausedKey, metaKey, pcKey, markerKey, prefix, token, lockDuration, now, limitMax,
    limitDuration, concurrency, settings, finished, answer)
  local paused, queueMax, queueDuration, queueConcurrency = false, nil, nil, nil
  for i = 1, #settings, 2 do
    local name = settings[i]
    if name == "paused" then
      paused = true
    elseif name == "max" then
      queueMax = tonumber(settings[i + 1])
    elseif name == "duration" then
      queueDuration = tonumber(settings[i + 1])
    elseif name == "concurrency" then
      queueConcurrency = tonumber(settings[i + 1])
    end
  end
  promoteDueJobs(delayedKey, waitKey, pausedKey, prioritizedKey, pcKey, markerKey, eventsKey,
    metaKey, prefix, now, paused)
  if paused then
    return { "", {}, 0 }
  end
  -- A rate limit the queue stores replaces the caller's; a concurrency it stores caps the
  -- caller's. Fields written by hand that do not read as numbers count as none.
  if queueMax and queueMax > 0 then
    limitMax, limitDuration = queueMax, queueDuration or 0
  end
  if queueConcurrency and queueConcurrency > 0
      and (concurrency == 0 or queueConcurrency < concurrency) then
    concurrency = queueConcurrency
  end
  if limitMax > 0 then
    local taken = tonumber(redis.call("GET", limiterKey)) or 0
    if taken >= limitMax then
      return { "", {}, math.max(redis.call("PTTL", limiterKey), 0) }
    end
  end
  if concurrency > 0 and redis.call("LLEN", activeKey) >= concurrency then
    return { "", {}, 0 }
  end
  -- The oldest waiting job moves to the head of active in one step; the oldest active job is
  -- therefore at the tail, where the finishing scripts' LREM starts.
  local jobId = redis.call("LMOVE", waitKey, activeKey, "RIGHT", "LEFT")
  if not jobId then
    jobId = redis.call("ZPOPMIN", prioritizedKey)[1]
    if jobId then
      redis.call("LPUSH", activeKey, jobId)
    end
  end
  if not jobId then
    refreshMarker(markerKey, waitKey, prioritizedKey, delayedKey, paused)
    return { "", {}, 0 }
  end
  if limitMax > 0 and redis.call("INCR", limiterKey) == 1 then
    redis.call("PEXPIRE", limiterKey, limitDuration)
  end
  local jobKey = prefix .. jobId
  redis.call("SET", jobKey .. ":lock", token, "PX", lockDuration)
  recordToken(prefix, token, jobId, finished, answer, lockDuration)
  redis.call("HSET", jobKey, "processedOn", now)
  emitUntrimmedEvent(eventsKey, "active", jobId, "prev", "waiting")
  -- A marker at 0 stays: more ready work, or at worst one idle worker woken for nothing (its
  -- pickup then refreshes the marker). A busy queue's pickup so reads the marker and no list.
  if redis.call("ZSCORE", markerKey, "next") ~= "0" then
    refreshMarker(markerKey, waitKey, prioritizedKey, delayedKey, paused)
  end
  return { jobId, redis.call("HGETALL", jobKey), 0 }
end

-- Records the answer of a finish that picked no job up, for the time the record has left (XX:
-- never a record without a time to live).
local function recordFinish(prefix, token, finished, answer)
  redis.call("SET", tokenKey(prefix, token), ":" .. finished .. ":" .. answer, "KEEPTTL", "XX")
end
-- A worker's lock token: any text but the empty one, which would name no pickup.
local function tokenArg(value)
  if value == "" then
    error("token must not be empty")
  end
  return value
end

local waitKey, activeKey, prioritizedKey, eventsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local stalledKey, limiterKey, delayedKey, pausedKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local metaKey, pcKey, markerKey = KEYS[9], KEYS[10], KEYS[11]
local finishedKey, metricsKey, waitingChildrenKey = KEYS[12], KEYS[13], KEYS[14]
local outcome = enumArg(ARGV[4], "outcome", "completed", "failed")
-- `now` is a number for sums; Redis gets the caller's text (nowText), which spares a conversion.
local jobId, token, nowText = ARGV[1], tokenArg(ARGV[2]), ARGV[3]
local now = nowArg(nowText)
local result, stacktrace = ARGV[5], ARGV[6]
local jitter = fractionArg(ARGV[7], "jitter")
local fetchNext = ARGV[8] == "1"
local lockDuration = ARGV[9] -- as the caller sent it, like nowText
digitsArg(lockDuration, "lock_duration", 1)
-- "0", the usual value, is read without a call (see moveToActive-11).
local limitMax = ARGV[10] == "0" and 0 or intArg(ARGV[10], "limit_max", 0)
local limitDuration = ARGV[11] == "0" and 0 or intArg(ARGV[11], "limit_duration", 0)
local concurrency = ARGV[12] == "0" and 0 or intArg(ARGV[12], "concurrency", 0)
local maxMetrics = ARGV[13] == "0" and 0 or intArg(ARGV[13], "max_metrics", 0)
local customDelay = ARGV[14] == "0" and 0 or intArg(ARGV[14], "backoff_delay", 0)

local prefix = queuePrefix(waitKey)
local jobKey = prefix .. jobId

local lockState = checkLock(jobKey .. ":lock", token)
if lockState ~= 0 then
  -- No lock for this token: a new call fails, a re-sent one answers what the first call did.
  local went = landedFinish(prefix, jobId, token)
  if went ~= "completed" and went ~= "failed" and went ~= "delayed" and went ~= "waiting" then
    return lockState
  end
  -- The first call's pickup, if it took a job: the token holds it. No new pickup: it could take
  -- back the job the first call retried, and the first call's reply had none.
  local held = fetchNext and heldJob(prefix, token)
  if held then
    return { went, held, redis.call("HGETALL", prefix .. held), 0 }
  end
  return { went, "", {}, 0 }
end
-- Read before anything is written: a failure past this point would leave the job nowhere. Every
-- job hash has "atm", so none means no job; "deps" marks a job that ever had a child.
local stored = redis.call("HMGET", jobKey, "opts", "parentKey", "deid", "atm", "deps")
if not stored[4] then
  return -1
end
if outcome == "completed" and stored[5] then
  if redis.call("SCARD", jobKey .. ":dependencies") > 0 then
    return -4
  end
  if redis.call("EXISTS", jobKey .. ":unsuccessful") == 1 then
    return -9
  end
end
local opts = jobOptions(stored[1])
local parentKey, dedupId = stored[2], stored[3]
local attemptsMade = (tonumber(stored[4]) or 0) + 1
-- "%d": redis.call would print the number as a float, which costs the server more.
local attemptsText = string.format("%d", attemptsMade)
if redis.call("LREM", activeKey, "-1", jobId) == 0 then
  return -3
end
redis.call("DEL", jobKey .. ":lock")
redis.call("SREM", stalledKey, jobId)

local went = outcome
local retryAt = nil
if outcome == "failed" and attemptsMade < (tonumber(opts.attempts) or 1) then
  local delay = backoffDelay(opts.backoff, attemptsMade, jitter, customDelay)
  redis.call("HSET", jobKey, "atm", attemptsText, "failedReason", result, "stacktrace", stacktrace,
    "delay", delay)
  -- Without a delay the job is ready again at once (as BullMQ's retry does), not delayed.
  if delay > 0 then
    went, retryAt = "delayed", now + delay
  else
    went = "waiting"
  end
else
  if outcome == "completed" then
    redis.call("HSET", jobKey, "atm", attemptsText, "returnvalue", result, "finishedOn", nowText)
  else
    redis.call("HSET", jobKey, "atm", attemptsText, "failedReason", result, "stacktrace",
      stacktrace, "finishedOn", nowText)
  end
  redis.call("ZADD", finishedKey, nowText, jobId)
  countFinished(metricsKey, maxMetrics, now)
  emitEvent(eventsKey, metaKey, outcome, jobId, "prev", "active")
  finishDedupId(prefix, jobId, dedupId, nowText)
  local rule = opts.removeOnFail
  if outcome == "completed" then
    rule = opts.removeOnComplete
  end
  applyRetention(finishedKey, prefix, jobId, rule, now)
  -- Then the parent, so that its events follow the child's. A completed child's value goes to
  -- the parent's :processed and the last one releases it; a failed one's policy decides
  -- (childFailed). A parent that retention removed has no :dependencies any more: SREM finds
  -- nothing to do, and nothing is written to it.
  if parentKey then
    if outcome == "failed" then
      childFailed(waitingChildrenKey, jobId, parentKey, opts, result, nowText)
    elseif redis.call("SREM", parentKey .. ":dependencies", jobKey) == 1 then
      redis.call("HSET", parentKey .. ":processed", jobKey, result)
      releaseParent(waitingChildrenKey, string.sub(parentKey, #prefix + 1), true)
    end
  end
end
local nextJob = { "", {}, 0 }
if fetchNext then
  nextJob = pickup(waitKey, activeKey, prioritizedKey, eventsKey, limiterKey, delayedKey,
    pausedKey, metaKey, pcKey, markerKey, prefix, token, lockDuration, nowText, limitMax,
    limitDuration, concurrency,
    redis.call("HGETALL", metaKey), jobId, went)
end
if nextJob[1] == "" then
  -- The token's record keeps this finish's answer for a re-send: the job may be removed, or
  -- finished again by another token, before the client sends it.
  recordFinish(prefix, token, jobId, went)
end
if retryAt then
  -- After the pickup, so the token never takes back the job it just retried: a finish of it
  -- re-sent could not be told from a new one.
  redis.call("ZADD", delayedKey, retryAt, jobId)
  signalWork(markerKey, retryAt)
  emitEvent(eventsKey, metaKey, "delayed", jobId, "delay", retryAt - now, "prev", "active")
elseif went == "waiting" then
  local state = enqueueReadyJob(waitKey, pausedKey, prioritizedKey, pcKey, markerKey, prefix,
    jobId, redis.call("HEXISTS", metaKey, "paused") == 1)
  emitEvent(eventsKey, metaKey, state == "paused" and "paused" or "waiting", jobId, "prev",
    "active")
end
return { went, nextJob[1], nextJob[2], nextJob[3] }
