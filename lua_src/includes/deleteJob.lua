--- @include "emitEvent"
--- @include "releaseDedupId"
--- @include "removeJobKeys"

-- Deletes a job in whatever state holds it: out of that state (`places`, the states to look in,
-- each { key, name }), and out of the stalled set; its deduplication id (`dedupId`, its "deid",
-- or nil) released as on removal; its hash and companion keys deleted; and a `removed` event
-- with the state it was in. What its parent records of it is the caller's to mend.
local function deleteJob(prefix, jobId, dedupId, places, stalledKey, eventsKey, metaKey)
  local prev = "unknown"
  for _, place in ipairs(places) do
    local name = place[2]
    local removed
    if name == "wait" or name == "paused" or name == "active" then
      removed = redis.call("LREM", place[1], "0", jobId)
    else
      removed = redis.call("ZREM", place[1], jobId)
    end
    if removed > 0 then
      prev = name
    end
  end
  redis.call("SREM", stalledKey, jobId)
  releaseDedupId(prefix, jobId, dedupId)
  removeJobKeys(prefix, jobId)
  emitEvent(eventsKey, metaKey, "removed", jobId, "prev", prev)
end
