--- Replaces a job's data, in whatever state the job is.
--- Nothing else of the job changes, and no event is appended.
--- @key job  `emq:{q}:<job_id>`  the job's hash
--- @arg job_id  id      the job's id
--- @arg data    json    the new data: any JSON value
--- @return int  1 when the data was replaced
--- @error -1 JobNotExist
--- @include "includes/checkJobKey"

local jobKey = KEYS[1]
local jobId, data = ARGV[1], ARGV[2]

checkJobKey(jobKey, jobId, "")
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end
redis.call("HSET", jobKey, "data", data)
return 1
