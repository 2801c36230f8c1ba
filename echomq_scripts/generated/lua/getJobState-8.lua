--- Tells which of the eight states holds a job.
--- @key wait              `emq:{q}:wait`               the wait list
--- @key paused            `emq:{q}:paused`             the paused list
--- @key active            `emq:{q}:active`             the active list
--- @key delayed           `emq:{q}:delayed`            the delayed sorted set
--- @key prioritized       `emq:{q}:prioritized`        the prioritized sorted set
--- @key completed         `emq:{q}:completed`          the completed sorted set
--- @key failed            `emq:{q}:failed`             the failed sorted set
--- @key waiting_children  `emq:{q}:waiting-children`   the waiting-children sorted set
--- @arg job_id  id  the job's id
--- @return string  the state's name ("wait", ..., "waiting-children"), or "unknown"
-- Finds the state that holds a job: the first of the given keys that contains its id.
-- Sorted sets are asked first: a ZSCORE is O(1), a list scan is O(N).
-- True when the list at `key` holds `value` (LPOS answers nil, seen in Lua as false, if not).
local function listContains(key, value)
  return redis.call("LPOS", key, value) ~= false
end

local function jobState(jobId, listStates, sortedSetStates)
  for _, state in ipairs(sortedSetStates) do
    if redis.call("ZSCORE", state[2], jobId) then
      return state[1]
    end
  end
  for _, state in ipairs(listStates) do
    if listContains(state[2], jobId) then
      return state[1]
    end
  end
  return "unknown"
end

local waitKey, pausedKey, activeKey, delayedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local prioritizedKey, completedKey, failedKey = KEYS[5], KEYS[6], KEYS[7]
local waitingChildrenKey = KEYS[8]
local jobId = ARGV[1]

local listStates = {
  { "wait", waitKey },
  { "paused", pausedKey },
  { "active", activeKey },
}
local sortedSetStates = {
  { "delayed", delayedKey },
  { "prioritized", prioritizedKey },
  { "completed", completedKey },
  { "failed", failedKey },
  { "waiting-children", waitingChildrenKey },
}
return jobState(jobId, listStates, sortedSetStates)
