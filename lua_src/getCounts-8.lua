--- Counts the jobs in each of the eight states.
--- @key wait              `emq:{q}:wait`              the wait list
--- @key paused            `emq:{q}:paused`            the paused list
--- @key active            `emq:{q}:active`            the active list
--- @key delayed           `emq:{q}:delayed`           the delayed set
--- @key prioritized       `emq:{q}:prioritized`       the prioritized set
--- @key completed         `emq:{q}:completed`         the completed set
--- @key failed            `emq:{q}:failed`            the failed set
--- @key waiting_children  `emq:{q}:waiting-children`  the waiting-children set
--- @return list[int]  the counts, in the order of the keys

return {
  redis.call("LLEN", KEYS[1]),
  redis.call("LLEN", KEYS[2]),
  redis.call("LLEN", KEYS[3]),
  redis.call("ZCARD", KEYS[4]),
  redis.call("ZCARD", KEYS[5]),
  redis.call("ZCARD", KEYS[6]),
  redis.call("ZCARD", KEYS[7]),
  redis.call("ZCARD", KEYS[8]),
}
