--- @include "childFailed"
--- @include "releaseParent"

-- A job that existed without a (live) parent and was named in a flow below `parentKey` (addFlow
-- has recorded it there, and in the parent's :dependencies, and checked that no cycle comes of
-- it) finishes joining it as if it had been added with it, by what addFlow read of it before its
-- first write: `finished` "completed" with `result` its return value, which goes to the parent's
-- :processed, the parent going on if that was the last child; "failed" with `result` its reason
-- and `opts` its options, whose policy is applied (childFailed) as if it had failed now; nil
-- when it has not finished, and stays pending. What is read before is what counts: a parent
-- that an earlier joiner failed may have removed this job by its retention since.
local function joinParent(waitingChildrenKey, prefix, jobId, parentKey, finished, result, opts,
    now)
  if finished == "completed" then
    -- An earlier child's failure may have failed the parent, and its retention removed it.
    if redis.call("SREM", parentKey .. ":dependencies", prefix .. jobId) == 1 then
      redis.call("HSET", parentKey .. ":processed", prefix .. jobId, result)
      releaseParent(waitingChildrenKey, string.sub(parentKey, #prefix + 1), true)
    end
  elseif finished == "failed" then
    childFailed(waitingChildrenKey, jobId, parentKey, opts, result, now)
  end
end
