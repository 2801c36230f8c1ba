-- Counts a job that finished (completed, or failed for good) in its outcome's metrics hash
-- `metricsKey` (`emq:{q}:metrics:<outcome>`): "count" goes up by one. With `keep` above 0 it also
-- keeps the per-minute series, the list `<metricsKey>:data`, newest minute first, at most `keep`
-- points: the first finish of a later minute than "prevTS" (the minute of the last point)
-- pushes how many finished in that minute, "count" then less "prevCount", and a 0 for each
-- minute after it in which none did, so a queue that finishes nothing writes nothing.
local function countFinished(metricsKey, keep, now)
  local count = redis.call("HINCRBY", metricsKey, "count", "1")
  if keep == 0 then
    return
  end
  local last = redis.call("HMGET", metricsKey, "prevTS", "prevCount")
  local before = string.format("%d", count - 1) -- the jobs that finished before this one
  local lastAt = tonumber(last[1])
  if not lastAt then
    -- The series starts in this minute, with this job.
    redis.call("HSET", metricsKey, "prevTS", string.format("%d", now), "prevCount", before)
    return
  end
  local minutes = math.floor(now / 60000) - math.floor(lastAt / 60000)
  if minutes <= 0 then
    return
  end
  local dataKey = metricsKey .. ":data"
  redis.call("LPUSH", dataKey, string.format("%d", count - 1 - (tonumber(last[2]) or 0)))
  -- The quiet minutes, at most the series' length, in batches: unpack has a stack limit.
  local quiet = math.min(minutes, keep) - 1
  while quiet > 0 do
    local zeros = {}
    for i = 1, math.min(quiet, 1000) do
      zeros[i] = "0"
    end
    redis.call("LPUSH", dataKey, unpack(zeros))
    quiet = quiet - #zeros
  end
  redis.call("LTRIM", dataKey, "0", string.format("%d", keep - 1))
  redis.call("HSET", metricsKey, "prevTS", string.format("%d", now), "prevCount", before)
end
