-- Where job scheduler `schedulerId`'s iteration `jobId` waits to run for the first time: the key
-- and the name of the state that holds it, or nil when it is not waiting, has run already (it
-- has processedOn: picked up, then back for a retry), or is not that scheduler's (no such job, or
-- a job of its own that took the id). `places` are the queue's delayed, prioritized, wait and
-- paused keys, in that order. Only a pending iteration is replaced, or removed with its
-- scheduler; one that ran is a job's own.
local function pendingIteration(prefix, schedulerId, jobId, places)
  local stored = redis.call("HMGET", prefix .. jobId, "rjk", "processedOn")
  if stored[1] ~= schedulerId or stored[2] then
    return nil
  end
  local names = { "delayed", "prioritized", "wait", "paused" }
  for i = 1, 2 do
    if redis.call("ZSCORE", places[i], jobId) then
      return places[i], names[i]
    end
  end
  for i = 3, 4 do
    if redis.call("LPOS", places[i], jobId) then
      return places[i], names[i]
    end
  end
  return nil
end
