-- Finds the state that holds a job: the first of the given keys that contains its id.
-- Sorted sets are asked first: a ZSCORE is O(1), a list scan is O(N).
--- @include "listContains"

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
