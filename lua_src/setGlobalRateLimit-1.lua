--- Sets the queue's rate limit, which every worker obeys, or removes it.
--- Stored in the meta hash's "max" and "duration": a pickup takes at most max jobs per duration
--- ms, whatever limit its caller passes.
--- @key meta  `emq:{q}:meta`  the queue's meta hash
--- @arg max       int(0..)  at most this many jobs per window (0: remove the limit)
--- @arg duration  int(0..)  the window, in milliseconds (0 with a max: the window ends at once)
--- @return int  1
--- @include "includes/checkQueueKeys"
--- @include "includes/digitsArg"

local metaKey = KEYS[1]
-- Stored as sent, so digits only: a pickup hands "duration" to PEXPIRE.
local max = digitsArg(ARGV[1], "max", 0)
digitsArg(ARGV[2], "duration", 0)
checkQueueKeys({ metaKey }, { "meta" })
if max == 0 then
  redis.call("HDEL", metaKey, "max", "duration")
else
  redis.call("HSET", metaKey, "max", ARGV[1], "duration", ARGV[2])
end
return 1
