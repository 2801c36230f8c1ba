--- Stores a job's stack trace and failure reason, in whatever state the job is.
--- What a worker records of a failure it handles itself; nothing else of the job changes.
--- @key job  `emq:{q}:<job_id>`  the job's hash
--- @arg job_id         id      the job's id
--- @arg stacktrace     string  the stack trace, as the caller keeps it (JSON, say)
--- @arg failed_reason  string  the failure's reason
--- @return int  1 when both were stored
--- @error -1 JobNotExist
--- @include "includes/checkJobKey"

local jobKey = KEYS[1]
local jobId, stacktrace, failedReason = ARGV[1], ARGV[2], ARGV[3]

checkJobKey(jobKey, jobId, "")
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end
redis.call("HSET", jobKey, "stacktrace", stacktrace, "failedReason", failedReason)
return 1
