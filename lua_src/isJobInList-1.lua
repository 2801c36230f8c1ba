--- Tells whether one of the queue's lists (wait, paused or active) holds a job. It only reads.
--- @key list  `emq:{q}:<state>`  the list
--- @arg state   enum(wait|paused|active)  the list's state
--- @arg job_id  id                        the job's id
--- @return int  1 when the list holds the job, 0 when it does not
--- @include "includes/enumArg"
--- @include "includes/listContains"

local listKey = KEYS[1]
enumArg(ARGV[1], "state", "wait", "paused", "active")
local jobId = ARGV[2]

return listContains(listKey, jobId) and 1 or 0
