--- Breaks a child's tie to its parent: the parent stops waiting for it, and the child keeps running
--- as a job of its own. The tie is a pending child (in the parent's :dependencies) or a failed one
--- that holds the parent (in its :unsuccessful). A parent left with nothing pending and no failed
--- child moves out of waiting-children as when its last child completes. A child that completed,
--- or whose failure was ignored, is recorded in the parent already: nothing is undone.
--- @key waiting_children  `emq:{q}:waiting-children`  the waiting-children set
--- @key job               `emq:{q}:<job_id>`          the child's hash
--- @arg job_id  id  the child's id
--- @return int  1 when the tie was broken, 0 when the child had none to break
--- @error -1 JobNotExist
--- @error -5 ParentJobNotExist
--- @include "includes/queuePrefix"
--- @include "includes/releaseParent"

local waitingChildrenKey, jobKey = KEYS[1], KEYS[2]
local prefix = queuePrefix(waitingChildrenKey)
-- The member a parent's sets hold: the job key as the add built it from the prefix and the id.
local childKey = prefix .. ARGV[1]

local parentKey = redis.call("HGET", jobKey, "parentKey")
if not parentKey then
  return redis.call("EXISTS", jobKey) == 1 and 0 or -1
end
if redis.call("EXISTS", parentKey) == 0 then
  return -5
end
if redis.call("SREM", parentKey .. ":dependencies", childKey) == 0
    and redis.call("ZREM", parentKey .. ":unsuccessful", childKey) == 0 then
  return 0
end
redis.call("HDEL", jobKey, "parentKey")
releaseParent(waitingChildrenKey, string.sub(parentKey, #prefix + 1), true)
return 1
