--- @include "schedulerJobId"

-- Whether a job is a job scheduler's current iteration: its "rjk" names a scheduler whose score
-- gives the job's id. The walks that empty a queue's keys keep it, as removeJob-13 refuses it:
-- the scheduler moves on only from it.
local function schedulerIteration(prefix, schedulersKey, jobId)
  local schedulerId = redis.call("HGET", prefix .. jobId, "rjk")
  local millis = schedulerId and redis.call("ZSCORE", schedulersKey, schedulerId)
  return millis and schedulerJobId(schedulerId, millis) == jobId or false
end
