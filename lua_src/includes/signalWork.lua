-- The marker is a sorted set with one member, "next", whose score says when work is due: 0 for
-- now, a timestamp for the next delayed job. Idle workers block on it (BZPOPMIN).

-- Lowers the marker to `dueAt`, adding it when missing. A busy queue's marker already says 0:
-- reading it first spares the write (ZSCORE costs the server less than a ZADD that changes
-- nothing).
local function signalWork(markerKey, dueAt)
  local score = redis.call("ZSCORE", markerKey, "next")
  if not score or tonumber(score) > dueAt then
    redis.call("ZADD", markerKey, dueAt, "next")
  end
end
