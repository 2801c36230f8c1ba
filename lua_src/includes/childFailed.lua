--- @include "applyRetention"
--- @include "countFinished"
--- @include "emitEvent"
--- @include "jobOptions"
--- @include "queuePrefix"
--- @include "finishDedupId"
--- @include "releaseParent"

-- What a child's failure for good does to its parent (`parentKey`, the child's "parentKey"
-- field), by the policy of the child's options (`opts`, read with jobOptions; a policy is set
-- when its value is JSON true):
-- - ignoreDependencyOnFailure: the child's `reason` goes to the parent's :failed, and the parent
--   goes on once no other child holds it;
-- - continueParentOnFailure: the same record, and the parent goes on at once;
-- - removeDependencyOnFailure: the dependency is dropped, and the parent goes on once no other
--   child holds it;
-- - failParentOnFailure: the child goes to the parent's :unsuccessful and a parent waiting for its
--   children fails, naming the child; its own policy then applies to its own parent, and so on up
--   the tree (a loop, not a recursion: a tree of any depth);
-- - none: the child goes to the parent's :unsuccessful and the parent stays; completing it answers
--   -9 (JobHasFailedChildren).
-- A parent that does not count the child as pending any more (removed, or the dependency removed)
-- is left alone.
local function childFailed(waitingChildrenKey, childId, parentKey, opts, reason, nowText)
  local prefix = queuePrefix(waitingChildrenKey)
  while parentKey do
    local childKey = prefix .. childId
    if redis.call("SREM", parentKey .. ":dependencies", childKey) == 0 then
      return
    end
    local parentId = string.sub(parentKey, #prefix + 1)
    if opts.ignoreDependencyOnFailure == true or opts.continueParentOnFailure == true then
      redis.call("HSET", parentKey .. ":failed", childKey, reason)
      releaseParent(waitingChildrenKey, parentId, opts.continueParentOnFailure ~= true)
      return
    end
    if opts.removeDependencyOnFailure == true then
      releaseParent(waitingChildrenKey, parentId, true)
      return
    end
    redis.call("ZADD", parentKey .. ":unsuccessful", nowText, childKey)
    if opts.failParentOnFailure ~= true
        or redis.call("ZREM", waitingChildrenKey, parentId) == 0 then
      return
    end
    -- The parent fails as a job does that has no attempt left: counted, its deduplication id
    -- released, its removeOnFail applied.
    local stored = redis.call("HMGET", parentKey, "opts", "parentKey", "deid")
    reason = "child " .. childKey .. " failed"
    redis.call("HSET", parentKey, "failedReason", reason, "finishedOn", nowText)
    redis.call("ZADD", prefix .. "failed", nowText, parentId)
    countFinished(prefix .. "metrics:failed", 0, tonumber(nowText))
    emitEvent(prefix .. "events", prefix .. "meta", "failed", parentId, "prev", "waiting-children")
    finishDedupId(prefix, parentId, stored[3], nowText)
    opts = jobOptions(stored[1])
    applyRetention(prefix .. "failed", prefix, parentId, opts.removeOnFail, tonumber(nowText))
    childId, parentKey = parentId, stored[2]
  end
end
