--- Reads a page of a job's logs, and how many lines they hold. It only reads.
--- A job without logs, or without a hash, reads as none.
--- @key logs  `emq:{q}:<job_id>:logs`  the job's logs, oldest first
--- @arg job_id  id            the job's id
--- @arg start   int(0..)      the first place of the page, counting from 0
--- @arg count   int(1..1000)  the most lines on the page
--- @arg asc     bool          oldest first; else newest first, the places counting from the newest
--- @return tuple[int, list[string]]  how many lines the logs hold, and the page
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

local logsKey = KEYS[1]
local jobId = ARGV[1]
local start = intArg(ARGV[2], "start", 0)
local count = intArg(ARGV[3], "count", 1, 1000)
local asc = ARGV[4] == "1"

checkJobKey(logsKey, jobId, ":logs")
local page
if asc then
  page = redis.call("LRANGE", logsKey, tostring(start), tostring(start + count - 1))
else
  -- Counted from the tail (-1 is the newest line), then turned around.
  local found = redis.call("LRANGE", logsKey, tostring(-start - count), tostring(-start - 1))
  page = {}
  for i = #found, 1, -1 do
    page[#page + 1] = found[i]
  end
end
return { redis.call("LLEN", logsKey), page }
