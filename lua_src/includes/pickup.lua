--- @include "promoteDueJobs"
--- @include "refreshMarker"
--- @include "recordToken"
--- @include "emitUntrimmedEvent"

-- moveToActive-11 and moveToFinished-14 share their first eleven keys, in this order:
--   1 wait, 2 active, 3 prioritized, 4 events, 5 stalled, 6 limiter, 7 delayed, 8 paused,
--   9 meta, 10 pc, 11 marker
-- and the code below reads them from KEYS by position: a table of their names, built on every
-- call, cost the server more than some of the calls it names (make bench). `now` is the caller's
-- clock as it sent it: Redis reads it, and a Lua number handed to redis.call costs a conversion
-- to text (Redis 7.0 prints it with "%.17g"), so numbers go as text where they can.

-- The pickup shared by moveToActive and moveToFinished's fetch-next: promote due delayed jobs,
-- respect the pause, the rate limiter (at most `limitMax` jobs per `limitDuration` ms) and the
-- concurrency cap, take the next job (wait first, else the best priority, FIFO within it), lock
-- it for `token`, record that the token holds it (`finished` and `answer`: the job the same call
-- finished first and where it went, or nil), make it active. Returns { jobId, fields, limitedFor }: the job, or "" and {}
-- and the milliseconds until the limiter allows another job (0 when there is nothing to do now).
local function pickup(prefix, token, lockDuration, now, limitMax, limitDuration, concurrency,
    paused, finished, answer)
  promoteDueJobs(prefix, now, paused)
  if paused then
    return { "", {}, 0 }
  end
  if limitMax > 0 then
    local taken = tonumber(redis.call("GET", KEYS[6])) or 0
    if taken >= limitMax then
      return { "", {}, math.max(redis.call("PTTL", KEYS[6]), 0) }
    end
  end
  if concurrency > 0 and redis.call("LLEN", KEYS[2]) >= concurrency then
    return { "", {}, 0 }
  end
  -- The oldest waiting job moves to the head of active in one step; the oldest active job is
  -- therefore at the tail, where the finishing scripts' LREM starts.
  local jobId = redis.call("LMOVE", KEYS[1], KEYS[2], "RIGHT", "LEFT")
  if not jobId then
    jobId = redis.call("ZPOPMIN", KEYS[3])[1]
    if jobId then
      redis.call("LPUSH", KEYS[2], jobId)
    end
  end
  if not jobId then
    refreshMarker(KEYS[11], KEYS[1], KEYS[3], KEYS[7], paused)
    return { "", {}, 0 }
  end
  if limitMax > 0 and redis.call("INCR", KEYS[6]) == 1 then
    redis.call("PEXPIRE", KEYS[6], limitDuration)
  end
  local jobKey = prefix .. jobId
  redis.call("SET", jobKey .. ":lock", token, "PX", lockDuration)
  recordToken(prefix, token, jobId, finished, answer, lockDuration)
  redis.call("HSET", jobKey, "processedOn", now)
  emitUntrimmedEvent(KEYS[4], "active", jobId, "prev", "waiting")
  -- A marker at 0 stays: more ready work, or at worst one idle worker woken for nothing (its
  -- pickup then refreshes the marker). A busy queue's pickup so reads the marker and no list.
  if redis.call("ZSCORE", KEYS[11], "next") ~= "0" then
    refreshMarker(KEYS[11], KEYS[1], KEYS[3], KEYS[7], paused)
  end
  return { jobId, redis.call("HGETALL", jobKey), 0 }
end
