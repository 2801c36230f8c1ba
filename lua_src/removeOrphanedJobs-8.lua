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
--- @include "includes/checkJobId"
--- @include "includes/checkQueueKeys"
--- @include "includes/cursorArg"
--- @include "includes/eraseJob"
--- @include "includes/intArg"

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
