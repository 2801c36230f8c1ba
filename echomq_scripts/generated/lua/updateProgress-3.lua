--- Sets a job's progress and appends a `progress` event that carries it.
--- The job may be in any state; the event is for the queue's listeners.
--- @key job     `emq:{q}:<job_id>`  the job's hash
--- @key events  `emq:{q}:events`    the event stream
--- @key meta    `emq:{q}:meta`      the queue's meta hash
--- @arg job_id    id    the job's id
--- @arg progress  json  the progress: a JSON text (a number, an object, ...), stored as sent
--- @return int  1 when the progress was set
--- @error -1 JobNotExist
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

local jobKey, eventsKey, metaKey = KEYS[1], KEYS[2], KEYS[3]
local jobId, progress = ARGV[1], ARGV[2]

local prefix = checkJobKey(jobKey, jobId, "")
if eventsKey ~= prefix .. "events" or metaKey ~= prefix .. "meta" then
  error("keys " .. eventsKey .. " and " .. metaKey .. " are not the events and meta keys of "
    .. prefix)
end
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end
redis.call("HSET", jobKey, "progress", progress)
emitEvent(eventsKey, metaKey, "progress", jobId, "data", progress)
return 1
