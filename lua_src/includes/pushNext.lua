--- @include "signalWork"

-- Puts a ready job without a priority where workers take it next: the tail of wait (they take
-- from the tail), or of paused while the queue is paused. Returns the state it went to.
local function pushNext(waitKey, pausedKey, markerKey, paused, jobId)
  if paused then
    redis.call("RPUSH", pausedKey, jobId)
    return "paused"
  end
  redis.call("RPUSH", waitKey, jobId)
  signalWork(markerKey, 0)
  return "wait"
end
