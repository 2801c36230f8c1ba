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
-- True when the list at `key` holds `value` (LPOS answers nil, seen in Lua as false, if not).
local function listContains(key, value)
  return redis.call("LPOS", key, value) ~= false
end
-- Finds the state that holds a job: the first of the given keys that contains its id.
-- Sorted sets are asked first: a ZSCORE is O(1), a list scan is O(N).

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

local listStates = {
  { "wait", KEYS[1] },
  { "paused", KEYS[2] },
  { "active", KEYS[3] },
}
local sortedSetStates = {
  { "delayed", KEYS[4] },
  { "prioritized", KEYS[5] },
  { "completed", KEYS[6] },
  { "failed", KEYS[7] },
  { "waiting-children", KEYS[8] },
}
return jobState(ARGV[1], listStates, sortedSetStates)
