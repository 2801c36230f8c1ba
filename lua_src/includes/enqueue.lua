--- @include "events"
--- @include "marker"

-- Priorities are scored priority * 2^32 + a queue-wide counter, so jobs of one priority leave
-- in the order they arrived. 2^53 bounds the score: priorities go up to 2^21 - 1.
local function priorityScore(priority, pcKey)
  return priority * 4294967296 + redis.call("INCR", pcKey) % 4294967296
end

-- Puts a job that is ready to run where workers take it: prioritized when it has a priority,
-- else paused when the queue is paused, else wait (LPUSH: workers take from the other end).
-- Returns the state it went to.
local function enqueueReady(queue, jobId, priority)
  if priority > 0 then
    redis.call("ZADD", queue.prioritized, priorityScore(priority, queue.pc), jobId)
    if redis.call("HEXISTS", queue.meta, "paused") == 0 then
      signalWork(queue.marker, 0)
    end
    return "prioritized"
  end
  if redis.call("HEXISTS", queue.meta, "paused") == 1 then
    redis.call("LPUSH", queue.paused, jobId)
    return "paused"
  end
  redis.call("LPUSH", queue.wait, jobId)
  signalWork(queue.marker, 0)
  return "wait"
end
