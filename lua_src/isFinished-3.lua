--- Tells whether a job has finished, and how. It only reads.
--- 1 when it completed, 2 when it failed, 0 when it has not (yet); with return_value, also its
--- return value or its failure reason.
--- @key completed  `emq:{q}:completed`  the completed set
--- @key failed     `emq:{q}:failed`     the failed set
--- @key job        `emq:{q}:<job_id>`   the job's hash
--- @arg job_id        id    the job's id
--- @arg return_value  bool = false  answer [finished, value] instead of finished alone
--- @return int | tuple[int, string]  0, 1 or 2; with return_value, that and the return value
---     (completed), the failure reason (failed) or "" (not finished)
--- @error -1 JobNotExist
--- @include "includes/checkJobKey"

local completedKey, failedKey, jobKey = KEYS[1], KEYS[2], KEYS[3]
local jobId, returnValue = ARGV[1], ARGV[2] == "1"

checkJobKey(jobKey, jobId, "")
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end
local finished, field = 0, nil
if redis.call("ZSCORE", completedKey, jobId) then
  finished, field = 1, "returnvalue"
elseif redis.call("ZSCORE", failedKey, jobId) then
  finished, field = 2, "failedReason"
end
if not returnValue then
  return finished
end
return { finished, field and redis.call("HGET", jobKey, field) or "" }
