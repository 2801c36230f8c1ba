--- Tells whether the queue is at its concurrency cap. It only reads.
--- The cap is the one setGlobalConcurrency-1 stored; a worker's own concurrency is not the
--- queue's.
--- @key meta    `emq:{q}:meta`    the queue's meta hash
--- @key active  `emq:{q}:active`  the active list
--- @return int  1 when the queue stores a cap and at least that many jobs are active, else 0

local cap = tonumber(redis.call("HGET", KEYS[1], "concurrency"))
if cap and cap > 0 and redis.call("LLEN", KEYS[2]) >= cap then
  return 1
end
return 0
