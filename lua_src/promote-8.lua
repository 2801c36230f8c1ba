--- Promotes a delayed job: it becomes due now, and goes where pickup puts a due delayed job
--- (prioritized with a priority, else wait, or paused while the queue is paused), with the
--- event pickup appends for it. Its hash's delay becomes 0.
--- @key delayed      `emq:{q}:delayed`      the delayed set, scored by run-at
--- @key wait         `emq:{q}:wait`         the wait list
--- @key paused       `emq:{q}:paused`       the paused list
--- @key prioritized  `emq:{q}:prioritized`  the prioritized set
--- @key pc           `emq:{q}:pc`           the counter that orders jobs of one priority
--- @key meta         `emq:{q}:meta`         the queue's meta hash
--- @key events       `emq:{q}:events`       the event stream
--- @key marker       `emq:{q}:marker`       the marker idle workers block on
--- @arg job_id  id  the job's id
--- @return int  0 when the job was promoted
--- @error -1 JobNotExist
--- @error -3 JobNotInState
--- @include "includes/checkJobId"
--- @include "includes/promoteJob"
--- @include "includes/queuePrefix"

local delayedKey, waitKey, pausedKey, prioritizedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local pcKey, metaKey, eventsKey, markerKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local jobId = ARGV[1]

checkJobId(jobId, "job id") -- the job's key is built from it
local prefix = queuePrefix(delayedKey)
if redis.call("EXISTS", prefix .. jobId) == 0 then
  return -1
end
if not promoteJob(delayedKey, waitKey, pausedKey, prioritizedKey, pcKey, markerKey, eventsKey,
    metaKey, prefix, jobId, redis.call("HEXISTS", metaKey, "paused") == 1) then
  return -3
end
return 0
