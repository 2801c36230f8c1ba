--- Removes the queue's orphaned jobs, a bounded SCAN batch a call.
--- Orphans are job hashes, and a job's companion keys, whose id no state key holds (left by a crash, or by a client that wrote
--- around the scripts). Walks the keyspace with SCAN from a cursor and answers the next one: on
--- a Redis Cluster, SCAN sees only the node the script runs on, which is the queue's.
--- @key wait              `emq:{q}:wait`              the wait list
--- @key paused            `emq:{q}:paused`            the paused list
--- @key active            `emq:{q}:active`            the active list
--- @key delayed           `emq:{q}:delayed`           the delayed set
--- @key prioritized       `emq:{q}:prioritized`       the prioritized set
--- @key completed         `emq:{q}:completed`         the completed set
--- @key failed            `emq:{q}:failed`            the failed set
--- @key waiting_children  `emq:{q}:waiting-children`  the waiting-children set
--- @arg cursor  string(non-empty) = "0"  the SCAN cursor, "0" to start, then what the last call answered
--- @arg count   int(1..10000)      the SCAN COUNT: about how many keys the call looks at
--- @return tuple[string, list[string]]  the cursor for the next call ("0": the walk is over),
---     and the ids of the jobs removed
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
-- A SCAN cursor: decimal digits, as Redis reads it. A cursor may pass 2^53, which a Lua number
-- does not hold exactly, so it stays the text it came as. Returns it.
local function cursorArg(value)
  if not string.find(value, "^%d+$") then
    error("cursor must be decimal digits, got '" .. value .. "'")
  end
  return value
end
-- Releases the deduplication id that a job being removed held (`dedupId`, its "deid" field, or
-- nil), TTL or not, unless another job holds it by now; an add kept for when it finished
-- (keepLastIfActive) goes with it.
local function releaseDedupId(prefix, jobId, dedupId)
  if dedupId and redis.call("GET", prefix .. "de:" .. dedupId) == jobId then
    redis.call("DEL", prefix .. "de:" .. dedupId, prefix .. "dn:" .. dedupId)
  end
end
-- Deletes a job's hash and its companion keys: its lock, its logs, and a parent's :dependencies,
-- :processed, :failed (ignored children) and :unsuccessful (failed children).
local function removeJobKeys(prefix, jobId)
  local jobKey = prefix .. jobId
  redis.call("DEL", jobKey, jobKey .. ":lock", jobKey .. ":logs", jobKey .. ":dependencies",
    jobKey .. ":processed", jobKey .. ":failed", jobKey .. ":unsuccessful")
end

-- Deletes what a job has besides its place in a state key, which the caller (a walk that takes
-- many jobs out of one key at a time) removes itself: its deduplication id released as on
-- removal, its hash and its companion keys. Returns its "parentKey", or nil: the caller tells
-- the parent once its own writes to the state key are done, since a parent it releases may go
-- to the key it walks.
local function eraseJob(prefix, jobId)
  local fields = redis.call("HMGET", prefix .. jobId, "deid", "parentKey")
  releaseDedupId(prefix, jobId, fields[1] or nil)
  removeJobKeys(prefix, jobId)
  return fields[2] or nil
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

local waitKey, pausedKey, activeKey, delayedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local prioritizedKey, completedKey, failedKey, waitingChildrenKey = KEYS[5], KEYS[6], KEYS[7],
  KEYS[8]
local cursor = cursorArg(ARGV[1])
local count = intArg(ARGV[2], "count", 1, 10000)

local prefix = checkQueueKeys({ waitKey, pausedKey, activeKey, delayedKey, prioritizedKey,
  completedKey, failedKey, waitingChildrenKey },
  { "wait", "paused", "active", "delayed", "prioritized", "completed", "failed",
    "waiting-children" })

-- The sorted sets first (ZSCORE is O(1)), then the lists, shortest first (LPOS reads the list).
local sets = { delayedKey, prioritizedKey, completedKey, failedKey, waitingChildrenKey }
local lists = { activeKey, pausedKey, waitKey }
local lengths = {}
for _, key in ipairs(lists) do
  lengths[key] = redis.call("LLEN", key)
end
table.sort(lists, function(a, b)
  return lengths[a] < lengths[b]
end)

local function inAState(id)
  for _, key in ipairs(sets) do
    if redis.call("ZSCORE", key, id) then
      return true
    end
  end
  for _, key in ipairs(lists) do
    if redis.call("LPOS", key, id) then
      return true
    end
  end
  return false
end

-- The pattern matches the prefix as it is: the glob characters a queue name may hold are escaped.
local pattern = string.gsub(prefix, "[%*%?%[%]\\]", "\\%0") .. "*"
local scanned = redis.call("SCAN", cursor, "MATCH", pattern, "COUNT", tostring(count))
local removed, seen = {}, {}
for _, key in ipairs(scanned[2]) do
  local rest = string.sub(key, #prefix + 1)
  local id = string.match(rest, "^[^:]+")
  -- A job's hash (a bare id), or a job's companion key (id:part); not one of the queue's own
  -- keys or the families its names start (checkJobId's reserved names).
  local isJob = id and (id ~= rest or redis.call("TYPE", key).ok == "hash")
    and (string.find(id, " ", 1, true)
      or not string.find(RESERVED_JOB_IDS, " " .. id .. " ", 1, true))
  if isJob and not seen[id] then
    seen[id] = true
    if not inAState(id) then
      eraseJob(prefix, id)
      removed[#removed + 1] = id
    end
  end
end
return { scanned[1], removed }
