-- Where a job scheduler's iteration `jobId` waits to run for the first time: the key and the name
-- of the state that holds it, or nil when it is not waiting, or has run already (it has
-- processedOn: picked up, then back for a retry). `places` are the queue's delayed, prioritized,
-- wait and paused keys, in that order. Only a pending iteration is replaced, or removed with its
-- scheduler; one that ran is a job's own.
local function pendingIteration(prefix, jobId, places)
  if redis.call("HEXISTS", prefix .. jobId, "processedOn") == 1 then
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
