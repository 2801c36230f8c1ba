--- Adds a job with a priority: to prioritized, where a lower number runs first and jobs of one
--- priority run in the order they were added.
--- An existing custom id, or a deduplication id still held, adds nothing and answers that job's
--- id; an existing custom id with another parent answers -7.
--- @key prioritized  `emq:{q}:prioritized`  the prioritized set
--- @key pc           `emq:{q}:pc`           the counter that orders jobs of one priority
--- @key meta         `emq:{q}:meta`         the queue's meta hash
--- @key id           `emq:{q}:id`           the counter of generated ids
--- @key events       `emq:{q}:events`       the event stream
--- @key marker       `emq:{q}:marker`       the marker idle workers block on
--- @arg job_id     id?                 a custom id, or "" to generate one
--- @arg name       string              the job's name
--- @arg data       string              the job's data, as JSON
--- @arg opts       json(object)        the job's options (attempts, backoff, ...)
--- @arg now        int(0..)            the caller's clock, in milliseconds
--- @arg dedup_id   string              a deduplication id, or ""
--- @arg parent_id  id?                 the id of a parent job in this queue, or ""
--- @arg priority   int(1..2097151)     1 (runs first) to 2097151
--- @return tuple[string, int]  the job's id, and 1 when it was added (0 when it existed)
--- @error -5 ParentJobNotExist
--- @error -7 ParentJobCannotBeReplaced
-- The rule for job ids, the same as echomq_scripts/keys.py's (the tests hold the two together). An
-- id becomes part of key names (emq:{q}:<id>, emq:{q}:<id>:lock, ...), so it may not hold ":"
-- (job "7:lock" would be job 7's lock) or a brace (the key's hash tag stays the queue's), and it
-- may not be the name of one of the queue's own keys (job "wait" would make emq:{q}:wait a hash).
-- No reserved name holds a space, so a space ends the search's words.
local RESERVED_JOB_IDS = " wait paused active delayed prioritized completed failed waiting-children stalled events meta id pc limiter marker metrics de token "

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
-- sets in "max-events" (10000 when unset).
local function emitEvent(eventsKey, metaKey, event, jobId, ...)
  local maxEvents = tonumber(redis.call("HGET", metaKey, "max-events")) or 10000
  redis.call("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", event, "jobId", jobId, ...)
end
-- Deletes a job's hash and its companion keys: its lock, and a parent's :dependencies,
-- :processed, :failed (ignored children) and :unsuccessful (failed children).
local function removeJobKeys(prefix, jobId)
  local jobKey = prefix .. jobId
  redis.call("DEL", jobKey, jobKey .. ":lock", jobKey .. ":dependencies", jobKey .. ":processed",
    jobKey .. ":failed", jobKey .. ":unsuccessful")
end

-- Applies removeOnComplete / removeOnFail to a finished set: true removes the job that just
-- finished, a number N >= 0 keeps the newest N (a negative N keeps all, as -1 does in BullMQ),
-- { age = seconds, count = N } drops jobs older than `age` and keeps at most N. Removed jobs lose
-- their hash and their companion keys. Returns true when the job that just finished was removed.
local function applyRetention(finishedKey, prefix, jobId, rule, now)
  if rule == nil or rule == false then
    return false
  end
  local drop = {}
  if rule == true then
    drop = { jobId }
  elseif type(rule) == "number" or type(rule) == "table" then
    -- Anything but a number counts as not given: a bad rule must not fail a finished job. So
    -- do a negative count (keep all) and a negative age.
    local keep = tonumber(type(rule) == "number" and rule or rule.count)
    local age = type(rule) == "table" and tonumber(rule.age) or nil
    keep = keep and keep >= 0 and math.floor(keep) or nil
    if age and age >= 0 then
      local old = redis.call("ZRANGEBYSCORE", finishedKey, "-inf", now - age * 1000)
      for _, id in ipairs(old) do
        drop[#drop + 1] = id
      end
    end
    if keep then
      local excess = redis.call("ZRANGE", finishedKey, 0, -keep - 1)
      for _, id in ipairs(excess) do
        drop[#drop + 1] = id
      end
    end
  end
  local removedOwn = false
  for _, id in ipairs(drop) do
    redis.call("ZREM", finishedKey, id)
    removeJobKeys(prefix, id)
    removedOwn = removedOwn or id == jobId
  end
  return removedOwn
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
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait"): job keys are built
-- from it, so they carry the queue's hash tag and land on its Cluster slot.
local function queuePrefix(key)
  return string.match(key, "^(.*:)[^:]*$")
end
-- Releases the deduplication id a finished job held (`dedupId`, its "deid" field, or nil),
-- unless another job holds it by now.
local function releaseDedupId(prefix, jobId, dedupId)
  if dedupId and redis.call("GET", prefix .. "de:" .. dedupId) == jobId then
    redis.call("DEL", prefix .. "de:" .. dedupId)
  end
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
    redis.call("INCR", prefix .. "metrics:failed")
    releaseDedupId(prefix, parentId, stored[3])
    emitEvent(prefix .. "events", prefix .. "meta", "failed", parentId, "prev", "waiting-children")
    opts = jobOptions(stored[1])
    applyRetention(prefix .. "failed", prefix, parentId, opts.removeOnFail, tonumber(nowText))
    childId, parentKey = parentId, stored[2]
  end
end

-- An add gave a parent and a custom id that an existing job holds. That job's other parent, when
-- it still exists, cannot be replaced: -7 (ParentJobCannotBeReplaced). The same parent, or one that
-- is gone, makes the add a duplicate that changes nothing: nil. A job without a parent joins this
-- one as if it had been added with it: pending until it finishes, or at once its return value in
-- the parent's :processed when it completed, or its failure handled by its own policy
-- (childFailed) when it failed. A job that is the parent or one of its ancestors is refused with a
-- Lua error, before any write.
local function joinParent(waitingChildrenKey, prefix, jobId, parentKey, now)
  local jobKey = prefix .. jobId
  local stored = redis.call("HMGET", jobKey, "parentKey", "returnvalue", "failedReason", "opts")
  if stored[1] then
    if stored[1] ~= parentKey and redis.call("EXISTS", stored[1]) == 1 then
      return -7
    end
    return nil
  end
  -- A job that is its parent's ancestor would wait for itself.
  local ancestor = parentKey
  while ancestor do
    if ancestor == jobKey then
      error("job '" .. jobId .. "' cannot be a child of its own descendant or of itself")
    end
    ancestor = redis.call("HGET", ancestor, "parentKey")
  end
  redis.call("HSET", jobKey, "parentKey", parentKey)
  redis.call("HSET", parentKey, "deps", "1")
  if redis.call("ZSCORE", prefix .. "completed", jobId) then
    redis.call("HSET", parentKey .. ":processed", jobKey, stored[2] or "")
    releaseParent(waitingChildrenKey, string.sub(parentKey, #prefix + 1), true)
    return nil
  end
  redis.call("SADD", parentKey .. ":dependencies", jobKey)
  if redis.call("ZSCORE", prefix .. "failed", jobId) then
    childFailed(waitingChildrenKey, jobId, parentKey, jobOptions(stored[4]), stored[3] or "", now)
  end
  return nil
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
-- decimal digits only, from `low` up to 2^53 - 1. Redis would refuse the text " 5" that tonumber
-- reads, and only after the script's first write; and a number handed to redis.call costs a
-- conversion to text. Returns the number, for sums.
local function digitsArg(value, name, low)
  if not string.find(value, "^%d+$") then
    error(name .. " must be an integer from " .. low .. " to 2^53 - 1 in decimal digits, got '"
      .. value .. "'")
  end
  return intArg(value, name, low)
end

-- The caller's clock, in ms: decimal digits, as Redis reads it. Returns the number.
local function nowArg(value)
  return digitsArg(value, "now", 0)
end

-- Creates a job's hash, the part every add script shares. The add scripts share ARGV 1 to 7 and
-- pass them here as they came: `customId` ("" for a generated id), `name`, `data` (JSON), `opts`
-- (JSON), `now`, `dedupId`, `parentId`; `extraFields` are the script's own fields of the hash.
-- Returns the job id and true when the job is new; the id of the job that already holds the
-- custom id (a `duplicated` event; with a parent, see joinParent) or the deduplication id and
-- false when nothing was added; or a failure code and false: -5 when the parent does not exist
-- (before any write), -7 when the custom id's job has another parent.
local function addJob(idKey, eventsKey, metaKey, customId, name, data, opts, now, dedupId,
    parentId, extraFields)
  local prefix = queuePrefix(idKey)
  nowArg(now) -- stored, and added to a set (addParentJob), as the caller sent it
  -- Refused before anything is written: ids become key names.
  if customId ~= "" then
    checkJobId(customId, "job id")
  end
  if parentId ~= "" then
    checkJobId(parentId, "parent id")
  end
  -- An object, not an array: cjson reads both as tables, so the text says which it is. The
  -- empty object, the common case, needs no decoding.
  if opts ~= "{}" then
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
  end
  local parentKey = nil
  if parentId ~= "" then
    parentKey = prefix .. parentId
    if redis.call("EXISTS", parentKey) == 0 then
      return -5, false
    end
  end
  if dedupId ~= "" then
    local holder = redis.call("GET", prefix .. "de:" .. dedupId)
    if holder then
      return holder, false
    end
  end
  local jobId = customId
  if jobId == "" then
    -- A custom id may already hold the next number: skip the numbers taken.
    repeat
      jobId = tostring(redis.call("INCR", idKey))
    until redis.call("EXISTS", prefix .. jobId) == 0
  elseif redis.call("EXISTS", prefix .. jobId) == 1 then
    if parentKey then
      local code = joinParent(prefix .. "waiting-children", prefix, jobId, parentKey, now)
      if code then
        return code, false
      end
    end
    emitEvent(eventsKey, metaKey, "duplicated", jobId)
    return jobId, false
  end
  local jobKey = prefix .. jobId
  local fields = {
    "name", name, "data", data, "opts", opts, "timestamp", now, "atm", "0", "stc", "0",
  }
  if parentKey then
    redis.call("SADD", parentKey .. ":dependencies", jobKey)
    -- Marks the parent, so that finishing a job that never had a child reads no set (-4).
    redis.call("HSET", parentKey, "deps", "1")
    fields[#fields + 1] = "parentKey"
    fields[#fields + 1] = parentKey
  end
  if dedupId ~= "" then
    redis.call("SET", prefix .. "de:" .. dedupId, jobId)
    fields[#fields + 1] = "deid"
    fields[#fields + 1] = dedupId
  end
  for _, value in ipairs(extraFields) do
    fields[#fields + 1] = value
  end
  redis.call("HSET", jobKey, unpack(fields))
  return jobId, true
end

local prioritizedKey, pcKey, metaKey, idKey, eventsKey, markerKey =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local jobId, name, data, opts, now, dedupId, parentId =
  ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local priority = intArg(ARGV[8], "priority", 1, 2097151) -- refused before anything else

local id, added = addJob(idKey, eventsKey, metaKey, jobId, name, data, opts, now, dedupId, parentId,
  { "priority", priority })
if not added and type(id) == "number" then
  return id -- a failure code
end
if added then
  local paused = redis.call("HEXISTS", metaKey, "paused") == 1
  pushPrioritized(prioritizedKey, pcKey, markerKey, paused, id, priority)
  emitEvent(eventsKey, metaKey, "prioritized", id, "priority", priority)
end
return { id, added and 1 or 0 }
