--- @include "signalWork"

-- Sets the marker (see signalWork) from the queue's state after a pickup took a job or found
-- none: 0 while ready work remains, else the next delayed job's run-at, else no marker.
local function refreshMarker(markerKey, waitKey, prioritizedKey, delayedKey, paused)
  if not paused and (redis.call("LLEN", waitKey) > 0 or redis.call("ZCARD", prioritizedKey) > 0) then
    signalWork(markerKey, 0)
    return
  end
  local nextDelayed = redis.call("ZRANGE", delayedKey, "0", "0", "WITHSCORES")
  if nextDelayed[2] then
    redis.call("ZADD", markerKey, nextDelayed[2], "next")
  else
    redis.call("DEL", markerKey)
  end
end
