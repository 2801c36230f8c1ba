--- @include "promoteDueJobs"
--- @include "refreshMarker"
--- @include "recordToken"
--- @include "emitUntrimmedEvent"

-- The pickup shared by moveToActive and moveToFinished's fetch-next: promote due delayed jobs,
-- respect the pause, the rate limiter (at most `limitMax` jobs per `limitDuration` ms) and the
-- concurrency cap, each as the queue's meta sets it or else as the caller asks, take the next job (wait first, else the best priority, FIFO within it), lock
-- it for `token`, record that the token holds it (`finished` and `answer`: the job the same call
-- finished first and where it went, or nil), make it active. Returns { jobId, fields, limitedFor }:
-- the job, or "" and {} and the milliseconds until the limiter allows another job (0 when there is
-- nothing to do now).
-- The keys come first, in the order of the two scripts' KEYS (which share them), as parameters:
-- a table of them, built on every call, cost the server more than some of the calls it names
-- (make bench). `settings` is the caller's `HGETALL meta`: whether the queue is paused, and the
-- queue's own limits, which every worker of every runtime obeys (setGlobalRateLimit-1,
-- setGlobalConcurrency-1). The hash is small, and reading it whole cost the server less than an
-- HMGET of the four fields (make bench). `now` and `lockDuration` are the caller's text as it sent it: Redis reads them,
-- and a Lua number handed to redis.call costs a conversion to text (Redis 7.0 prints it with
-- "%.17g"), so numbers go as text where they can.
local function pickup(waitKey, activeKey, prioritizedKey, eventsKey, limiterKey, delayedKey,
    pausedKey, metaKey, pcKey, markerKey, prefix, token, lockDuration, now, limitMax,
    limitDuration, concurrency, settings, finished, answer)
  local paused, queueMax, queueDuration, queueConcurrency = false, nil, nil, nil
  for i = 1, #settings, 2 do
    local name = settings[i]
    if name == "paused" then
      paused = true
    elseif name == "max" then
      queueMax = tonumber(settings[i + 1])
    elseif name == "duration" then
      queueDuration = tonumber(settings[i + 1])
    elseif name == "concurrency" then
      queueConcurrency = tonumber(settings[i + 1])
    end
  end
  promoteDueJobs(delayedKey, waitKey, pausedKey, prioritizedKey, pcKey, markerKey, eventsKey,
    metaKey, prefix, now, paused)
  if paused then
    return { "", {}, 0 }
  end
  -- A rate limit the queue stores replaces the caller's; a concurrency it stores caps the
  -- caller's. Fields written by hand that do not read as numbers count as none.
  if queueMax and queueMax > 0 then
    limitMax, limitDuration = queueMax, queueDuration or 0
  end
  if queueConcurrency and queueConcurrency > 0
      and (concurrency == 0 or queueConcurrency < concurrency) then
    concurrency = queueConcurrency
  end
  if limitMax > 0 then
    local taken = tonumber(redis.call("GET", limiterKey)) or 0
    if taken >= limitMax then
      return { "", {}, math.max(redis.call("PTTL", limiterKey), 0) }
    end
  end
  if concurrency > 0 and redis.call("LLEN", activeKey) >= concurrency then
    return { "", {}, 0 }
  end
  -- The oldest waiting job moves to the head of active in one step; the oldest active job is
  -- therefore at the tail, where the finishing scripts' LREM starts.
  local jobId = redis.call("LMOVE", waitKey, activeKey, "RIGHT", "LEFT")
  if not jobId then
    jobId = redis.call("ZPOPMIN", prioritizedKey)[1]
    if jobId then
      redis.call("LPUSH", activeKey, jobId)
    end
  end
  if not jobId then
    refreshMarker(markerKey, waitKey, prioritizedKey, delayedKey, paused)
    return { "", {}, 0 }
  end
  if limitMax > 0 and redis.call("INCR", limiterKey) == 1 then
    redis.call("PEXPIRE", limiterKey, limitDuration)
  end
  local jobKey = prefix .. jobId
  redis.call("SET", jobKey .. ":lock", token, "PX", lockDuration)
  recordToken(prefix, token, jobId, finished, answer, lockDuration)
  redis.call("HSET", jobKey, "processedOn", now)
  emitUntrimmedEvent(eventsKey, "active", jobId, "prev", "waiting")
  -- A marker at 0 stays: more ready work, or at worst one idle worker woken for nothing (its
  -- pickup then refreshes the marker). A busy queue's pickup so reads the marker and no list.
  if redis.call("ZSCORE", markerKey, "next") ~= "0" then
    refreshMarker(markerKey, waitKey, prioritizedKey, delayedKey, paused)
  end
  return { jobId, redis.call("HGETALL", jobKey), 0 }
end
