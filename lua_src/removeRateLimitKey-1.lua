--- Ends the rate limiter's current window: pickups may take jobs again at once.
--- The count starts again from 0 at the next pickup with a rate limit.
--- @key limiter  `emq:{q}:limiter`  the rate limiter's count, with the window's TTL
--- @return int  1 when a window was running, 0 when none was
--- @include "includes/checkQueueKeys"

local limiterKey = KEYS[1]
checkQueueKeys({ limiterKey }, { "limiter" })
return redis.call("DEL", limiterKey)
