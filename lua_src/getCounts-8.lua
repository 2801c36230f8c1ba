--- Counts the jobs in each of the eight states.
--- @key wait              `emq:{q}:wait`              the wait list
--- @key paused            `emq:{q}:paused`            the paused list
--- @key active            `emq:{q}:active`            the active list
--- @key delayed           `emq:{q}:delayed`           the delayed set
--- @key prioritized       `emq:{q}:prioritized`       the prioritized set
--- @key completed         `emq:{q}:completed`         the completed set
--- @key failed            `emq:{q}:failed`            the failed set
--- @key waiting_children  `emq:{q}:waiting-children`  the waiting-children set
--- @return Counts(wait: int, paused: int, active: int, delayed: int, prioritized: int,
---     completed: int, failed: int, waiting_children: int)  the counts, in the order of the keys

local waitKey, pausedKey, activeKey, delayedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local prioritizedKey, completedKey, failedKey = KEYS[5], KEYS[6], KEYS[7]
local waitingChildrenKey = KEYS[8]

return {
  redis.call("LLEN", waitKey),
  redis.call("LLEN", pausedKey),
  redis.call("LLEN", activeKey),
  redis.call("ZCARD", delayedKey),
  redis.call("ZCARD", prioritizedKey),
  redis.call("ZCARD", completedKey),
  redis.call("ZCARD", failedKey),
  redis.call("ZCARD", waitingChildrenKey),
}
