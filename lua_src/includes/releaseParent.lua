--- @include "emitEvent"
--- @include "enqueueReadyJob"
--- @include "queuePrefix"

-- Moves a parent out of waiting-children to where a ready job goes: prioritized when its hash has
-- a priority, else wait, or paused while the queue is paused. With `whenDone` it goes only once no
-- child is pending and none is recorded in :unsuccessful (a child that failed without a policy
-- that lets the parent go on holds it). A parent that is not in waiting-children (active, or
-- removed) stays where it is. The other keys are built from the prefix: the scripts that release
-- a parent do not all take them in KEYS.
local function releaseParent(waitingChildrenKey, parentId, whenDone)
  local prefix = queuePrefix(waitingChildrenKey)
  local parentKey = prefix .. parentId
  if whenDone and (redis.call("SCARD", parentKey .. ":dependencies") > 0
      or redis.call("EXISTS", parentKey .. ":unsuccessful") == 1) then
    return
  end
  if redis.call("ZREM", waitingChildrenKey, parentId) == 0 then
    return
  end
  local metaKey = prefix .. "meta"
  enqueueReadyJob(prefix .. "wait", prefix .. "paused", prefix .. "prioritized", prefix .. "pc",
    prefix .. "marker", prefix, parentId, redis.call("HEXISTS", metaKey, "paused") == 1)
  emitEvent(prefix .. "events", metaKey, "waiting", parentId, "prev", "waiting-children")
end
