--- Sets the queue's concurrency cap, which every worker obeys, or removes it.
--- Stored in the meta hash's "concurrency": a pickup takes no job while that many are active,
--- whatever concurrency its caller passes (a smaller one still holds).
--- @key meta  `emq:{q}:meta`  the queue's meta hash
--- @arg concurrency  int(0..)  at most this many jobs active in the queue (0: remove the cap)
--- @return int  1
--- @include "includes/checkQueueKeys"
--- @include "includes/digitsArg"

local metaKey = KEYS[1]
-- Stored as sent, so digits only.
local concurrency = digitsArg(ARGV[1], "concurrency", 0)
checkQueueKeys({ metaKey }, { "meta" })
if concurrency == 0 then
  redis.call("HDEL", metaKey, "concurrency")
else
  redis.call("HSET", metaKey, "concurrency", ARGV[1])
end
return 1
