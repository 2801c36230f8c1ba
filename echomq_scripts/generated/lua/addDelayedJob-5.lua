--- Adds a job that runs after a delay: to delayed, scored by the time it becomes due.
--- An existing custom id, or a deduplication id still held, adds nothing and answers that job's
--- id. A job with a parent is added by addFlow.
--- @key delayed  `emq:{q}:delayed`  the delayed set, scored by run-at
--- @key meta     `emq:{q}:meta`     the queue's meta hash
--- @key id       `emq:{q}:id`       the counter of generated ids
--- @key events   `emq:{q}:events`   the event stream
--- @key marker   `emq:{q}:marker`   the marker idle workers block on
--- @arg job_id     id? = ""            a custom id, or "" to generate one
--- @arg name       string              the job's name
--- @arg data       json                the job's data: any JSON value
--- @arg opts       json(object) = {}   the job's options (attempts, backoff, ...)
--- @arg now        int(0..) = @now     the caller's clock, in milliseconds
--- @arg dedup_id   string = ""         a deduplication id, or ""
--- @arg delay      int(0..)            milliseconds from now until the job is due
--- @return Added(job_id: string, added: int)
---     the job's id, and 1 when it was added (0 when it existed)
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
-- Deletes a job's hash and its companion keys: its lock, its logs, and a parent's :dependencies,
-- :processed, :failed (ignored children) and :unsuccessful (failed children).
local function removeJobKeys(prefix, jobId)
  local jobKey = prefix .. jobId
  redis.call("DEL", jobKey, jobKey .. ":lock", jobKey .. ":logs", jobKey .. ":dependencies",
    jobKey .. ":processed", jobKey .. ":failed", jobKey .. ":unsuccessful")
end

-- The deduplication step of an add with the deduplication id `dedupId` and its options `dedup`
-- (checkJobArgs's reading of opts.deduplication, or nil): `customId` ("" for a generated id),
-- whether a job has it (`exists`), and the job's `name`, `data`, `opts` and the add script's
-- own fields (`extraFields`), kept when the add is deferred.
-- Returns the holder's id when the add is deduplicated: it adds nothing, and a `deduplicated`
-- event names the holder and the id that was not added. Before that, with `extend`, a TTL that
-- runs on the key starts again; with `keepLastIfActive` and the holder active, the add is kept
-- (the last one wins) in `dn:<dedupId>`, to be added when the holder finishes (finishDedupId),
-- and the id is held until then.
-- Otherwise returns nil, then what SET takes after the new job's id for the key (a TTL, none with
-- keepLastIfActive: held until the job finishes; KEEPTTL when a replaced holder's TTL runs on),
-- then the holder replaced: with `replace`, a holder still delayed (and no flow's child) is
-- removed (`removed`) and the add goes on in its place, unless the custom id exists.
local function deduplicate(prefix, eventsKey, metaKey, dedupId, dedup, customId, exists, name,
    data, opts, extraFields)
  local key = prefix .. "de:" .. dedupId
  local holder = redis.call("GET", key)
  local ttl = dedup and dedup.ttl
  local keepLast = dedup and dedup.keepLastIfActive
  local replaced = nil
  if holder then
    -- The job the key names still holds the id only while its own "deid" says so: a TTL
    -- outlives its job, whose id another job may take. Only a holder that holds is replaced, or
    -- kept for (read only then: a plain deduplicated add reads nothing more).
    local holds, hasParent = false, false
    if dedup and (dedup.replace or keepLast) then
      local stored = redis.call("HMGET", prefix .. holder, "deid", "parentKey")
      holds, hasParent = stored[1] == dedupId, stored[2] ~= false
    end
    local delayedKey = prefix .. "delayed"
    if holds and dedup.replace and not exists and not hasParent
        and redis.call("ZSCORE", delayedKey, holder) then
      redis.call("ZREM", delayedKey, holder)
      -- An add kept while it ran, before this retry, goes with it: this one is the last now.
      redis.call("DEL", prefix .. "dn:" .. dedupId)
      removeJobKeys(prefix, holder)
      emitEvent(eventsKey, metaKey, "removed", holder, "prev", "delayed")
      replaced = holder
    else
      if holds and keepLast and redis.call("LPOS", prefix .. "active", holder) then
        local nextKey = prefix .. "dn:" .. dedupId
        redis.call("DEL", nextKey)
        redis.call("HSET", nextKey, "name", name, "data", data, "opts", opts, "jid", customId,
          unpack(extraFields))
        redis.call("PERSIST", key)
      elseif ttl and dedup.extend and redis.call("PTTL", key) > 0 then
        -- Only a TTL that runs starts again: a key held without one (keepLastIfActive's, while
        -- its holder runs) stays held until its job finishes.
        redis.call("SET", key, holder, "PX", ttl)
      end
      emitEvent(eventsKey, metaKey, "deduplicated", holder, "deduplicationId", dedupId,
        "deduplicatedJobId", customId)
      return holder
    end
  end
  -- The add goes on; its key is held until the job finishes with keepLastIfActive, keeps what
  -- is left of a replaced holder's TTL unless extend, else gets the TTL asked for, or none.
  if keepLast then
    return nil, {}, replaced
  end
  if ttl and replaced and not dedup.extend then
    return nil, { "KEEPTTL" }, replaced
  end
  return nil, ttl and { "PX", ttl } or {}, replaced
end
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait", "emq:{q}:7:lock"),
-- or nil when the key is not one of a queue's: job keys are built from it, so they carry the
-- queue's hash tag and land on its Cluster slot. The scripts that delete by the keys a runtime
-- passes check each against it.
local function queuePrefix(key)
  return string.match(key, "^(emq:{[^{}]*}:)")
end

-- Adds one job without a parent (a flow's jobs are added by addFlow): the add scripts' shared
-- part. They pass `customId` ("" for a generated id), `name`, `data` (JSON), `opts` (JSON),
-- `now` and `dedupId` as they came, and their own fields of the hash (`extraFields`). Returns the
-- job id and true when the job is new; or, adding nothing, the id of the job that holds the
-- deduplication id (deduplicate), or that has the custom id (a `duplicated` event), and false.
local function addJob(idKey, eventsKey, metaKey, customId, name, data, opts, now, dedupId,
    extraFields)
  local dedup = checkJobArgs(customId, opts, now, dedupId)
  local prefix = queuePrefix(idKey)
  local exists = customId ~= "" and redis.call("EXISTS", prefix .. customId) == 1
  local dedupKeyArgs, replaced = nil, nil
  if dedupId ~= "" then
    local holder
    holder, dedupKeyArgs, replaced = deduplicate(prefix, eventsKey, metaKey, dedupId, dedup,
      customId, exists, name, data, opts, extraFields)
    if holder then
      return holder, false
    end
  end
  if exists then
    emitEvent(eventsKey, metaKey, "duplicated", customId)
    return customId, false
  end
  local jobId = createJob(idKey, prefix, customId, name, data, opts, now, dedupId, dedupKeyArgs,
    extraFields, nil)
  if replaced then
    emitEvent(eventsKey, metaKey, "deduplicated", jobId, "deduplicationId", dedupId,
      "deduplicatedJobId", replaced)
  end
  return jobId, true
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

local delayedKey, metaKey, idKey, eventsKey, markerKey =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local jobId, name, data, opts, now, dedupId = ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6]
local delay = intArg(ARGV[7], "delay", 0)

local runAt = runAtArg(now, delay, "delay") -- refused before anything else
local id, added = addJob(idKey, eventsKey, metaKey, jobId, name, data, opts, now, dedupId,
  { "delay", delay })
if added then
  redis.call("ZADD", delayedKey, runAt, id)
  signalWork(markerKey, runAt)
  emitEvent(eventsKey, metaKey, "delayed", id, "delay", delay, "runAt", runAt)
end
return { id, added and 1 or 0 }
