--- Tells how long the rate limiter still holds pickups back. It only reads.
--- The limiter holds them while it has counted at least the limit in its window: the max_jobs
--- given, or else the queue's stored rate limit. Without either, any limiter left (the one
--- rateLimit-1 sets) is answered.
--- @key limiter  `emq:{q}:limiter`  the rate limiter's count, with the window's TTL
--- @key meta     `emq:{q}:meta`     the queue's meta hash
--- @arg max_jobs  int(0..) = 0  the limit to test (0: the queue's stored one)
--- @return int  the milliseconds until a pickup may take a job, or 0 when it may now
-- The argument checkers, intArg and the other *Arg includes, return the value or raise a Lua
-- error that names the argument: scripts read their arguments before they write anything, so a
-- caller's mistake never leaves a job half-moved. Every bound is also in the script's header, so
-- the generated wrappers refuse the same values before sending them.

-- Integers stop at 2^53 - 1, the largest a Lua number holds exactly.
local MAX_INTEGER = 9007199254740991

-- An integer argument from `low` to `high` (nil: 2^53 - 1).
local function intArg(value, name, low, high)
  local number = tonumber(value)
  high = high or MAX_INTEGER
  if not number or number % 1 ~= 0 or number < low or number > high then
    local upTo = high == MAX_INTEGER and "2^53 - 1" or tostring(high)
    error(name .. " must be an integer from " .. low .. " to " .. upTo .. ", got '"
      .. tostring(value) .. "'")
  end
  return number
end
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

local limiterKey, metaKey = KEYS[1], KEYS[2]
return rateLimitTtl(limiterKey, metaKey, intArg(ARGV[1], "max_jobs", 0))
