--- Runs a finished job again: a completed or failed job goes back where a ready job goes
--- (prioritized with a priority, else wait, or paused while the queue is paused: last in line,
--- or with opts.lifo next), without its finish (finishedOn, processedOn, and returnvalue or
--- failedReason), its attempts made kept or, with reset_attempts, back to 0. A parent that
--- recorded its finish waits for it again. A job in completed or failed holds no lock: every
--- finish deletes it.
--- @key finished     `emq:{q}:<outcome>`    the completed or the failed set
--- @key wait         `emq:{q}:wait`         the wait list
--- @key paused       `emq:{q}:paused`       the paused list
--- @key prioritized  `emq:{q}:prioritized`  the prioritized set
--- @key pc           `emq:{q}:pc`           the counter that orders jobs of one priority
--- @key meta         `emq:{q}:meta`         the queue's meta hash
--- @key events       `emq:{q}:events`       the event stream
--- @key marker       `emq:{q}:marker`       the marker idle workers block on
--- @arg job_id          id                      the job's id
--- @arg outcome         enum(completed|failed)  the set the job must be in
--- @arg reset_attempts  bool = false            set its attempts made back to 0
--- @return string  where the job went: "wait", "paused" or "prioritized"
--- @error -1 JobNotExist
--- @error -3 JobNotInState
--- @include "includes/checkJobId"
--- @include "includes/checkQueueKeys"
--- @include "includes/enumArg"
--- @include "includes/reprocessJob"

local finishedKey, waitKey, pausedKey, prioritizedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local pcKey, metaKey, eventsKey, markerKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local jobId, outcome = ARGV[1], enumArg(ARGV[2], "outcome", "completed", "failed")
local resetAttempts = ARGV[3] == "1"

checkJobId(jobId, "job id") -- the job's key is built from it
local prefix = checkQueueKeys({ finishedKey }, { outcome })
if redis.call("EXISTS", prefix .. jobId) == 0 then
  return -1
end
if not redis.call("ZSCORE", finishedKey, jobId) then
  return -3
end
return reprocessJob(finishedKey, waitKey, pausedKey, prioritizedKey, pcKey, markerKey, eventsKey,
  metaKey, prefix, jobId, outcome, resetAttempts, redis.call("HEXISTS", metaKey, "paused") == 1)
