--- @include "emitEvent"
--- @include "enqueueReadyJob"
--- @include "lifoOption"

-- Sends a finished job (`outcome`: "completed" or "failed", the set `finishedKey` it is in) back
-- to run again: out of its set, without the fields of its finish (finishedOn, processedOn, and
-- returnvalue or failedReason; with `resetAttempts` its attempts made go back to 0), pending again
-- for a parent that recorded it, and where a ready job goes, with a "waiting" (or "paused")
-- event whose prev is the outcome. Returns the state it went to.
local function reprocessJob(finishedKey, waitKey, pausedKey, prioritizedKey, pcKey, markerKey,
    eventsKey, metaKey, prefix, jobId, outcome, resetAttempts, paused)
  local jobKey = prefix .. jobId
  redis.call("ZREM", finishedKey, jobId)
  redis.call("HDEL", jobKey, "finishedOn", "processedOn",
    outcome == "completed" and "returnvalue" or "failedReason")
  if resetAttempts then
    redis.call("HSET", jobKey, "atm", "0") -- every job hash has atm
  end
  -- A parent that still exists and recorded the child's finish waits for it again.
  local stored = redis.call("HMGET", jobKey, "parentKey", "opts")
  local parentKey = stored[1]
  if parentKey and redis.call("EXISTS", parentKey) == 1 then
    local recorded
    if outcome == "completed" then
      recorded = redis.call("HDEL", parentKey .. ":processed", jobKey) == 1
    else
      recorded = redis.call("ZREM", parentKey .. ":unsuccessful", jobKey) == 1
        or redis.call("HDEL", parentKey .. ":failed", jobKey) == 1
    end
    if recorded then
      redis.call("SADD", parentKey .. ":dependencies", jobKey)
    end
  end
  local state = enqueueReadyJob(waitKey, pausedKey, prioritizedKey, pcKey, markerKey, prefix, jobId,
    paused, lifoOption(stored[2]))
  emitEvent(eventsKey, metaKey, state == "paused" and "paused" or "waiting", jobId, "prev", outcome)
  return state
end
