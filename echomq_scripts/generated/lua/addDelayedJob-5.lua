--- Adds a job that runs after a delay: to delayed, scored by the time it becomes due.
--- An existing custom id, or a deduplication id still held, adds nothing and answers that job's id.
--- @key delayed  `emq:{q}:delayed`  the delayed set, scored by run-at
--- @key meta     `emq:{q}:meta`     the queue's meta hash
--- @key id       `emq:{q}:id`       the counter of generated ids
--- @key events   `emq:{q}:events`   the event stream
--- @key marker   `emq:{q}:marker`   the marker idle workers block on
--- @arg job_id     string  a custom id, or "" to generate one
--- @arg name       string  the job's name
--- @arg data       string  the job's data, as JSON
--- @arg opts       string  the job's options, as JSON (attempts, backoff, removeOnComplete, ...)
--- @arg now        int     the caller's clock, in milliseconds
--- @arg dedup_id   string  a deduplication id, or ""
--- @arg parent_id  string  the id of a parent job in this queue, or ""
--- @arg delay      int     milliseconds from now until the job is due
--- @return tuple[string, int]  the job's id, and 1 when it was added (0 when it existed)
--- @error -5 ParentJobNotExist
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait"): job keys are built
-- from it, so they carry the queue's hash tag and land on its Cluster slot.
local function queuePrefix(key)
  return string.match(key, "^(.*:)[^:]*$")
end
-- A numeric argument, or a Lua error naming it: scripts read their numbers before they write
-- anything, so a caller's mistake never leaves a job half-moved.
local function numberArg(value, name)
  local number = tonumber(value)
  if not number then
    error(name .. " must be a number, got '" .. tostring(value) .. "'")
  end
  return number
end

-- Creates a job's hash, the part every add script shares. `args` holds the add scripts' common
-- arguments: job_id ("" for a generated id), name, data (JSON), opts (JSON), now, dedup_id,
-- parent_id. Returns the job id and true when the job is new; the id of the job that already
-- holds the custom id or the deduplication id and false when nothing was added; or a failure
-- code (-5 when the parent does not exist).
local function addJob(idKey, args, extraFields)
  local prefix = queuePrefix(idKey)
  numberArg(args.now, "now")
  -- An object, not an array: cjson reads both as tables, so the text says which it is.
  local ok, opts = pcall(cjson.decode, args.opts)
  if not ok or type(opts) ~= "table" or not string.match(args.opts, "^%s*{") then
    -- Refused before anything is written.
    error("opts must be a JSON object")
  end
  if args.dedup_id ~= "" then
    local holder = redis.call("GET", prefix .. "de:" .. args.dedup_id)
    if holder then
      return holder, false
    end
  end
  local jobId = args.job_id
  if jobId == "" then
    -- A custom id may already hold the next number: skip the numbers taken.
    repeat
      jobId = tostring(redis.call("INCR", idKey))
    until redis.call("EXISTS", prefix .. jobId) == 0
  elseif redis.call("EXISTS", prefix .. jobId) == 1 then
    return jobId, false
  end
  local jobKey = prefix .. jobId
  local fields = {
    "name", args.name, "data", args.data, "opts", args.opts,
    "timestamp", args.now, "atm", 0, "stc", 0,
  }
  if args.parent_id ~= "" then
    local parentKey = prefix .. args.parent_id
    if redis.call("EXISTS", parentKey) == 0 then
      return -5, false
    end
    redis.call("SADD", parentKey .. ":dependencies", jobKey)
    fields[#fields + 1] = "parentKey"
    fields[#fields + 1] = parentKey
  end
  if args.dedup_id ~= "" then
    redis.call("SET", prefix .. "de:" .. args.dedup_id, jobId)
    fields[#fields + 1] = "deid"
    fields[#fields + 1] = args.dedup_id
  end
  for _, value in ipairs(extraFields) do
    fields[#fields + 1] = value
  end
  redis.call("HSET", jobKey, unpack(fields))
  return jobId, true
end

-- The add scripts' shared arguments, by name, from their fixed ARGV positions 1..7.
local function addArgs()
  return {
    job_id = ARGV[1], name = ARGV[2], data = ARGV[3], opts = ARGV[4],
    now = ARGV[5], dedup_id = ARGV[6], parent_id = ARGV[7],
  }
end
-- Appends an event to the queue's stream, trimmed to about the length the queue's meta hash
-- sets in "max-events" (10000 when unset).
local function emitEvent(eventsKey, metaKey, event, jobId, ...)
  local maxEvents = tonumber(redis.call("HGET", metaKey, "max-events")) or 10000
  redis.call("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", event, "jobId", jobId, ...)
end
-- The marker is a sorted set with one member, "next", whose score says when work is due: 0 for
-- now, a timestamp for the next delayed job. Idle workers block on it (BZPOPMIN).
local function signalWork(markerKey, dueAt)
  redis.call("ZADD", markerKey, "LT", dueAt, "next")
end

-- Sets the marker from the queue's state after jobs left or arrived.
local function refreshMarker(markerKey, waitKey, prioritizedKey, delayedKey, paused)
  if not paused and (redis.call("LLEN", waitKey) > 0 or redis.call("ZCARD", prioritizedKey) > 0) then
    redis.call("ZADD", markerKey, 0, "next")
    return
  end
  local nextDelayed = redis.call("ZRANGE", delayedKey, 0, 0, "WITHSCORES")
  if nextDelayed[2] then
    redis.call("ZADD", markerKey, nextDelayed[2], "next")
  else
    redis.call("DEL", markerKey)
  end
end

local delay = numberArg(ARGV[8], "delay")
local runAt = numberArg(ARGV[5], "now") + delay
local jobId, added = addJob(KEYS[3], addArgs(), { "delay", delay })
if jobId == -5 then
  return -5
end
if added then
  redis.call("ZADD", KEYS[1], runAt, jobId)
  signalWork(KEYS[5], runAt)
  emitEvent(KEYS[4], KEYS[2], "delayed", jobId, "delay", delay, "runAt", runAt)
end
return { jobId, added and 1 or 0 }
