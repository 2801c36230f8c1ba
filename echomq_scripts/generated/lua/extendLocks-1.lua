--- Extends the locks of many jobs in one call: a worker's heartbeat for all the jobs it runs.
--- Each is extended as extendLock-2 extends one: while its token holds it, with its stalled mark
--- cleared and its token's record renewed. A job whose lock is gone or held by another token is
--- left as it is and answered with its code; the others are extended all the same.
--- @key stalled  `emq:{q}:stalled`  the queue's stalled set
--- @arg duration  int(1..)  the locks' new time to live, in milliseconds
--- @arg... jobs   string    per job: its id, then the token that holds its lock
--- @return list[tuple[string, int]]  the jobs not extended, in the order sent: each id with -2
---     (its lock is gone) or -6 (another token holds it)
--- @error -2 JobLockNotExist
--- @error -6 JobLockMismatch
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

-- Refuses, with a Lua error, keys that are not the queue's keys of the names given (`keys[i]`
-- must be `<prefix><names[i]>`, one prefix for all): the walks delete by the keys a runtime
-- passes, and a runtime that builds them itself must build them for one queue. Returns the
-- queue's prefix.
local function checkQueueKeys(keys, names)
  local prefix = queuePrefix(keys[1])
  for i, name in ipairs(names) do
    if not prefix or keys[i] ~= prefix .. name then
      error("key " .. keys[i] .. " is not the queue's " .. name .. " key")
    end
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

-- Extends a job's lock by `duration` ms (the text the caller sent) when `token` holds it, and
-- returns 0; else the lock's code (checkLock), and writes nothing. The token's record lives as
-- long as the lock (renewed, not rewritten: it may hold the answer of the finish that handed the
-- token on), and the job leaves the stalled set, so the next stalled check does not count it.
local function renewLock(prefix, lockKey, stalledKey, token, duration, jobId)
  local lockState = checkLock(lockKey, token)
  if lockState ~= 0 then
    return lockState
  end
  redis.call("SET", lockKey, token, "PX", duration)
  redis.call("PEXPIRE", tokenKey(prefix, token), duration)
  redis.call("SREM", stalledKey, jobId)
  return 0
end
-- A worker's lock token: any text but the empty one, which would name no pickup.
local function tokenArg(value)
  if value == "" then
    error("token must not be empty")
  end
  return value
end

local stalledKey = KEYS[1]
local duration = ARGV[1] -- as the caller sent it: Redis reads it
digitsArg(duration, "duration", 1)

local prefix = checkQueueKeys({ stalledKey }, { "stalled" })
if #ARGV % 2 ~= 1 then
  error("jobs are pairs of a job id and a token, got " .. (#ARGV - 1) .. " values")
end
-- Every pair is checked before the first lock is extended: the locks' keys are built from the ids.
for i = 2, #ARGV, 2 do
  checkJobId(ARGV[i], "job id")
  tokenArg(ARGV[i + 1])
end

local refused = {}
for i = 2, #ARGV, 2 do
  local jobId = ARGV[i]
  local lockState = renewLock(prefix, prefix .. jobId .. ":lock", stalledKey, ARGV[i + 1],
    duration, jobId)
  if lockState ~= 0 then
    refused[#refused + 1] = { jobId, lockState }
  end
end
return refused
