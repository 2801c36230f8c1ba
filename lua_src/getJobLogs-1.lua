--- Reads a page of a job's logs, and how many lines they hold. It only reads.
--- A job without logs, or without a hash, reads as none.
--- @key logs  `emq:{q}:<job_id>:logs`  the job's logs, oldest first
--- @arg job_id  id            the job's id
--- @arg start   int(0..)      the first place of the page, counting from 0
--- @arg count   int(1..1000)  the most lines on the page
--- @arg asc     bool          oldest first; else newest first, the places counting from the newest
--- @return tuple[int, list[string]]  how many lines the logs hold, and the page
--- @include "includes/checkJobKey"
--- @include "includes/intArg"

local logsKey = KEYS[1]
local jobId = ARGV[1]
local start = intArg(ARGV[2], "start", 0)
local count = intArg(ARGV[3], "count", 1, 1000)
local asc = ARGV[4] == "1"

checkJobKey(logsKey, jobId, ":logs")
local page
if asc then
  page = redis.call("LRANGE", logsKey, tostring(start), tostring(start + count - 1))
else
  -- Counted from the tail (-1 is the newest line), then turned around.
  local found = redis.call("LRANGE", logsKey, tostring(-start - count), tostring(-start - 1))
  page = {}
  for i = #found, 1, -1 do
    page[#page + 1] = found[i]
  end
end
return { redis.call("LLEN", logsKey), page }
