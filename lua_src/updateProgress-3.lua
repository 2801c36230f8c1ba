--- Sets a job's progress and appends a `progress` event that carries it.
--- The job may be in any state; the event is for the queue's listeners.
--- @key job     `emq:{q}:<job_id>`  the job's hash
--- @key events  `emq:{q}:events`    the event stream
--- @key meta    `emq:{q}:meta`      the queue's meta hash
--- @arg job_id    id    the job's id
--- @arg progress  json  the progress: a JSON text (a number, an object, ...), stored as sent
--- @return int  1 when the progress was set
--- @error -1 JobNotExist
--- @include "includes/checkJobKey"
--- @include "includes/emitEvent"

local jobKey, eventsKey, metaKey = KEYS[1], KEYS[2], KEYS[3]
local jobId, progress = ARGV[1], ARGV[2]

local prefix = checkJobKey(jobKey, jobId, "")
if eventsKey ~= prefix .. "events" or metaKey ~= prefix .. "meta" then
  error("keys " .. eventsKey .. " and " .. metaKey .. " are not the events and meta keys of "
    .. prefix)
end
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end
redis.call("HSET", jobKey, "progress", progress)
emitEvent(eventsKey, metaKey, "progress", jobId, "data", progress)
return 1
