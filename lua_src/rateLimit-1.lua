--- Holds the queue's pickups back for a while: a worker's dynamic rate limit.
--- For example after the service a job calls answered "too many requests". The limiter counts
--- as full until the time is over, so every pickup with a rate limit (the caller's or the
--- queue's) answers the time left instead of a job; a pickup without one is not held back.
--- @key limiter  `emq:{q}:limiter`  the rate limiter's count, with the window's TTL
--- @arg duration  int(1..)  how long to hold pickups back, in milliseconds
--- @return int  1
--- @include "includes/checkQueueKeys"
--- @include "includes/digitsArg"

local limiterKey = KEYS[1]
digitsArg(ARGV[1], "duration", 1)
checkQueueKeys({ limiterKey }, { "limiter" })
-- The largest count a Lua number holds exactly: above any limit.
redis.call("SET", limiterKey, "9007199254740991", "PX", ARGV[1])
return 1
