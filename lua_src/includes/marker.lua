-- The marker is a sorted set with one member, "next", whose score says when work is due: 0 for
-- now, a timestamp for the next delayed job. Idle workers block on it (BZPOPMIN).
local function signalWork(markerKey, dueAt)
  redis.call("ZADD", markerKey, "LT", dueAt, "next")
end

-- Sets the marker from the queue's state after jobs left or arrived.
local function refreshMarker(markerKey, waitKey, prioritizedKey, delayedKey, paused)
  if not paused and (redis.call("LLEN", waitKey) > 0 or redis.call("ZCARD", prioritizedKey) > 0) then
    redis.call("ZADD", markerKey, 0, "next")
    return
  end
  local nextDelayed = redis.call("ZRANGE", delayedKey, 0, 0, "WITHSCORES")
  if nextDelayed[2] then
    redis.call("ZADD", markerKey, nextDelayed[2], "next")
  else
    redis.call("DEL", markerKey)
  end
end
