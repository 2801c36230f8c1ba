--- @include "signalWork"

-- Puts a ready job without a priority where workers take it: the head of wait (they take from
-- the tail), or of paused while the queue is paused. Returns the state it went to.
local function pushReady(waitKey, pausedKey, markerKey, paused, jobId)
  if paused then
    redis.call("LPUSH", pausedKey, jobId)
    return "paused"
  end
  redis.call("LPUSH", waitKey, jobId)
  signalWork(markerKey, 0)
  return "wait"
end
