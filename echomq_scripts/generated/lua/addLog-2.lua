--- Adds a line to a job's logs, in whatever state the job is.
--- With keep_logs above 0, only the newest keep_logs lines are kept. The logs go when the job
--- goes.
--- @key job   `emq:{q}:<job_id>`       the job's hash
--- @key logs  `emq:{q}:<job_id>:logs`  the job's logs, oldest first
--- @arg job_id     id        the job's id
--- @arg line       string    the line to add
--- @arg keep_logs  int(0..) = 0  keep only the newest this many lines, or 0 to keep every line
--- @return int  how many lines the job's logs hold now
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

local jobKey, logsKey = KEYS[1], KEYS[2]
local jobId, line = ARGV[1], ARGV[2]
local keepLogs = intArg(ARGV[3], "keep_logs", 0)

checkJobKey(jobKey, jobId, "")
checkJobKey(logsKey, jobId, ":logs")
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end
local count = redis.call("RPUSH", logsKey, line)
if keepLogs > 0 and count > keepLogs then
  redis.call("LTRIM", logsKey, tostring(-keepLogs), "-1")
  return keepLogs
end
return count
