-- How long the rate limiter still holds pickups back, in ms, or 0 when a pickup may take a job
-- now. It holds them while it has counted at least the limit in its window: `maxJobs`, or when
-- that is 0 the queue's stored rate limit; without either, any limiter left (the one
-- rateLimit-1 sets) holds them for the time it has left.
local function rateLimitTtl(limiterKey, metaKey, maxJobs)
  if maxJobs == 0 then
    maxJobs = tonumber(redis.call("HGET", metaKey, "max")) or 0
  end
  if maxJobs > 0 and (tonumber(redis.call("GET", limiterKey)) or 0) < maxJobs then
    return 0
  end
  return math.max(redis.call("PTTL", limiterKey), 0)
end
