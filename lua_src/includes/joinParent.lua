--- @include "childFailed"
--- @include "jobOptions"
--- @include "releaseParent"

-- An add gave a parent and a custom id that an existing job holds. That job's other parent, when
-- it still exists, cannot be replaced: -7 (ParentJobCannotBeReplaced). The same parent, or one that
-- is gone, makes the add a duplicate that changes nothing: nil. A job without a parent joins this
-- one as if it had been added with it: pending until it finishes, or at once its return value in
-- the parent's :processed when it completed, or its failure handled by its own policy
-- (childFailed) when it failed. A job that is the parent or one of its ancestors is refused with a
-- Lua error, before any write.
local function joinParent(waitingChildrenKey, prefix, jobId, parentKey, now)
  local jobKey = prefix .. jobId
  local stored = redis.call("HMGET", jobKey, "parentKey", "returnvalue", "failedReason", "opts")
  if stored[1] then
    if stored[1] ~= parentKey and redis.call("EXISTS", stored[1]) == 1 then
      return -7
    end
    return nil
  end
  -- A job that is its parent's ancestor would wait for itself.
  local ancestor = parentKey
  while ancestor do
    if ancestor == jobKey then
      error("job '" .. jobId .. "' cannot be a child of its own descendant or of itself")
    end
    ancestor = redis.call("HGET", ancestor, "parentKey")
  end
  redis.call("HSET", jobKey, "parentKey", parentKey)
  redis.call("HSET", parentKey, "deps", "1")
  if redis.call("ZSCORE", prefix .. "completed", jobId) then
    redis.call("HSET", parentKey .. ":processed", jobKey, stored[2] or "")
    releaseParent(waitingChildrenKey, string.sub(parentKey, #prefix + 1), true)
    return nil
  end
  redis.call("SADD", parentKey .. ":dependencies", jobKey)
  if redis.call("ZSCORE", prefix .. "failed", jobId) then
    childFailed(waitingChildrenKey, jobId, parentKey, jobOptions(stored[4]), stored[3] or "", now)
  end
  return nil
end
