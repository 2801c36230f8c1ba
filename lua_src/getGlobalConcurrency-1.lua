--- Reads the queue's concurrency cap. It only reads.
--- @key meta  `emq:{q}:meta`  the queue's meta hash
--- @return int  the cap setGlobalConcurrency-1 stored, or 0 when there is none

return tonumber(redis.call("HGET", KEYS[1], "concurrency")) or 0
