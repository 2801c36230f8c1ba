--- @include "enqueue"

-- Moves every delayed job that is due to where it can run (at most 1000 per call, so one call
-- stays short however many are due).
local function promoteDueJobs(queue, now)
  local due = redis.call("ZRANGEBYSCORE", queue.delayed, "-inf", now, "LIMIT", 0, 1000)
  for _, jobId in ipairs(due) do
    redis.call("ZREM", queue.delayed, jobId)
    local priority = tonumber(redis.call("HGET", queue.prefix .. jobId, "priority")) or 0
    local state = enqueueReady(queue, jobId, priority)
    emitEvent(queue.events, queue.meta, state == "paused" and "paused" or "waiting", jobId,
      "prev", "delayed")
  end
end

-- The pickup shared by moveToActive and moveToFinished's fetch-next: promote due delayed jobs,
-- respect the pause, the rate limiter (at most `limits.max` jobs per `limits.duration` ms) and
-- the concurrency cap, take the next job (wait first, else the best priority, FIFO within it),
-- lock it, make it active. Returns { jobId, fields, limitedFor }: the job, or "" and {} and the
-- milliseconds until the limiter allows another job (0 when there is simply nothing to do).
local function pickup(queue, token, lockDuration, now, limits)
  local paused = redis.call("HEXISTS", queue.meta, "paused") == 1
  promoteDueJobs(queue, now)
  if paused then
    return { "", {}, 0 }
  end
  if limits.max > 0 then
    local taken = tonumber(redis.call("GET", queue.limiter)) or 0
    if taken >= limits.max then
      return { "", {}, math.max(redis.call("PTTL", queue.limiter), 0) }
    end
  end
  if limits.concurrency > 0 and redis.call("LLEN", queue.active) >= limits.concurrency then
    return { "", {}, 0 }
  end
  -- The oldest waiting job moves to the head of active in one step; the oldest active job is
  -- therefore at the tail, where the finishing scripts' LREM starts.
  local jobId = redis.call("LMOVE", queue.wait, queue.active, "RIGHT", "LEFT")
  if not jobId then
    local best = redis.call("ZPOPMIN", queue.prioritized)
    jobId = best[1]
    if jobId then
      redis.call("LPUSH", queue.active, jobId)
    end
  end
  if not jobId then
    refreshMarker(queue.marker, queue.wait, queue.prioritized, queue.delayed, paused)
    return { "", {}, 0 }
  end
  if limits.max > 0 and redis.call("INCR", queue.limiter) == 1 then
    redis.call("PEXPIRE", queue.limiter, limits.duration)
  end
  local jobKey = queue.prefix .. jobId
  redis.call("SET", jobKey .. ":lock", token, "PX", lockDuration)
  redis.call("SREM", queue.stalled, jobId)
  redis.call("HSET", jobKey, "processedOn", now)
  emitEvent(queue.events, queue.meta, "active", jobId, "prev", "waiting")
  refreshMarker(queue.marker, queue.wait, queue.prioritized, queue.delayed, paused)
  return { jobId, redis.call("HGETALL", jobKey), 0 }
end
