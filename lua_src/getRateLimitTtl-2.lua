--- Tells how long the rate limiter still holds pickups back. It only reads.
--- The limiter holds them while it has counted at least the limit in its window: the max_jobs
--- given, or else the queue's stored rate limit. Without either, any limiter left (the one
--- rateLimit-1 sets) is answered.
--- @key limiter  `emq:{q}:limiter`  the rate limiter's count, with the window's TTL
--- @key meta     `emq:{q}:meta`     the queue's meta hash
--- @arg max_jobs  int(0..) = 0  the limit to test (0: the queue's stored one)
--- @return int  the milliseconds until a pickup may take a job, or 0 when it may now
--- @include "includes/intArg"
--- @include "includes/rateLimitTtl"

local limiterKey, metaKey = KEYS[1], KEYS[2]
return rateLimitTtl(limiterKey, metaKey, intArg(ARGV[1], "max_jobs", 0))
