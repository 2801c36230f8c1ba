--- @include "childFailed"
--- @include "jobOptions"
--- @include "releaseParent"

-- A job that existed, had no parent, and was named again in a flow below `parentKey` (addFlow has
-- recorded it there, and in the parent's :dependencies, and checked that no cycle comes of it)
-- finishes joining it as if it had been added with it: when it completed, its return value goes
-- to the parent's :processed and the parent goes on if that was the last child; when it failed,
-- its own policy is applied (childFailed), as if it had failed now; else it stays pending.
local function joinParent(waitingChildrenKey, prefix, jobId, parentKey, now)
  local jobKey = prefix .. jobId
  if redis.call("ZSCORE", prefix .. "completed", jobId) then
    -- An earlier child's failure may have failed the parent, and its retention removed it.
    if redis.call("SREM", parentKey .. ":dependencies", jobKey) == 1 then
      redis.call("HSET", parentKey .. ":processed", jobKey,
        redis.call("HGET", jobKey, "returnvalue") or "")
      releaseParent(waitingChildrenKey, string.sub(parentKey, #prefix + 1), true)
    end
  elseif redis.call("ZSCORE", prefix .. "failed", jobId) then
    local stored = redis.call("HMGET", jobKey, "failedReason", "opts")
    childFailed(waitingChildrenKey, jobId, parentKey, jobOptions(stored[2]), stored[1] or "", now)
  end
end
