--- Gives a delayed job a new delay, counted from now: it becomes due at now + delay, its hash's
--- delay is the new one, and idle workers are woken for then.
--- @key delayed  `emq:{q}:delayed`  the delayed set, scored by run-at
--- @key meta     `emq:{q}:meta`     the queue's meta hash
--- @key events   `emq:{q}:events`   the event stream
--- @key marker   `emq:{q}:marker`   the marker idle workers block on
--- @arg job_id  id        the job's id
--- @arg delay   int(0..)  milliseconds from now until the job is due
--- @arg now     int(0..) = @now  the caller's clock, in milliseconds
--- @return int  0 when the delay was changed
--- @error -1 JobNotExist
--- @error -3 JobNotInState
--- @include "includes/checkJobId"
--- @include "includes/emitEvent"
--- @include "includes/intArg"
--- @include "includes/queuePrefix"
--- @include "includes/runAtArg"
--- @include "includes/signalWork"

local delayedKey, metaKey, eventsKey, markerKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local jobId, delay, now = ARGV[1], intArg(ARGV[2], "delay", 0), ARGV[3]

local runAt = runAtArg(now, delay, "delay")
checkJobId(jobId, "job id") -- the job's key is built from it
local jobKey = queuePrefix(delayedKey) .. jobId
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end
if not redis.call("ZSCORE", delayedKey, jobId) then
  return -3
end
local delayText, runAtText = string.format("%d", delay), string.format("%d", runAt)
redis.call("HSET", jobKey, "delay", delayText)
redis.call("ZADD", delayedKey, runAtText, jobId)
signalWork(markerKey, runAt)
emitEvent(eventsKey, metaKey, "delayed", jobId, "delay", delayText, "runAt", runAtText)
return 0
