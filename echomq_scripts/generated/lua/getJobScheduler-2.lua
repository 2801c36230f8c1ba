--- Reads a job scheduler: its settings, with "id", "next" (its next run, or its last once the
--- limit or the end date is reached) and "ic" (the iterations scheduled), or {} when there is
--- none.
--- @key schedulers  `emq:{q}:repeat`                 the job schedulers, scored by next run
--- @key scheduler   `emq:{q}:repeat:<scheduler_id>`  the scheduler's settings
--- @arg scheduler_id  id  the scheduler's id
--- @return hash  the scheduler's fields, or {}
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

-- Refuses a scheduler id that breaks the id rule, and keys that are not its: `schedulersKey` must
-- be a queue's `emq:{q}:repeat` and `schedulerKey` `emq:{q}:repeat:<schedulerId>`. A runtime
-- that builds the keys itself must build them for this id; the scripts write and delete by them.
local function checkSchedulerKeys(schedulersKey, schedulerKey, schedulerId)
  if schedulerId == "" then
    error("scheduler id must not be empty")
  end
  checkJobId(schedulerId, "scheduler id")
  -- One find of the whole key, not queuePrefix's capture and a concatenation: an upsert pays
  -- this on every call, and the capture cost it 2.5k instructions more (make bench).
  if not string.find(schedulersKey, "^emq:{[^{}]*}:repeat$")
      or schedulerKey ~= schedulersKey .. ":" .. schedulerId then
    error("keys " .. schedulersKey .. " and " .. schedulerKey .. " are not the keys of scheduler '"
      .. schedulerId .. "'")
  end
end

local schedulersKey, schedulerKey = KEYS[1], KEYS[2]
local schedulerId = ARGV[1]

checkSchedulerKeys(schedulersKey, schedulerKey, schedulerId)
local nextRun = redis.call("ZSCORE", schedulersKey, schedulerId)
if not nextRun then
  return {}
end
local fields = redis.call("HGETALL", schedulerKey)
fields[#fields + 1], fields[#fields + 2] = "id", schedulerId
fields[#fields + 1], fields[#fields + 2] = "next", string.format("%d", tonumber(nextRun))
return fields
