--- Adds a line to a job's logs, in whatever state the job is.
--- With keep_logs above 0, only the newest keep_logs lines are kept. The logs go when the job
--- goes.
--- @key job   `emq:{q}:<job_id>`       the job's hash
--- @key logs  `emq:{q}:<job_id>:logs`  the job's logs, oldest first
--- @arg job_id     id        the job's id
--- @arg line       string    the line to add
--- @arg keep_logs  int(0..) = 0  keep only the newest this many lines, or 0 to keep every line
--- @return int  how many lines the job's logs hold now
--- @error -1 JobNotExist
--- @include "includes/checkJobKey"
--- @include "includes/intArg"

local jobKey, logsKey = KEYS[1], KEYS[2]
local jobId, line = ARGV[1], ARGV[2]
local keepLogs = intArg(ARGV[3], "keep_logs", 0)

checkJobKey(jobKey, jobId, "")
checkJobKey(logsKey, jobId, ":logs")
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end
local count = redis.call("RPUSH", logsKey, line)
if keepLogs > 0 and count > keepLogs then
  redis.call("LTRIM", logsKey, tostring(-keepLogs), "-1")
  return keepLogs
end
return count
