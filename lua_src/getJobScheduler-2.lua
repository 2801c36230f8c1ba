--- Reads a job scheduler: its settings, with "id", "next" (its next run, or its last once the
--- limit or the end date is reached) and "ic" (the iterations scheduled), or {} when there is
--- none.
--- @key schedulers  `emq:{q}:repeat`                 the job schedulers, scored by next run
--- @key scheduler   `emq:{q}:repeat:<scheduler_id>`  the scheduler's settings
--- @arg scheduler_id  id  the scheduler's id
--- @return hash  the scheduler's fields, or {}
--- @include "includes/checkSchedulerKeys"

local schedulersKey, schedulerKey = KEYS[1], KEYS[2]
local schedulerId = ARGV[1]

checkSchedulerKeys(schedulersKey, schedulerKey, schedulerId)
local nextRun = redis.call("ZSCORE", schedulersKey, schedulerId)
if not nextRun then
  return {}
end
local fields = redis.call("HGETALL", schedulerKey)
fields[#fields + 1], fields[#fields + 2] = "id", schedulerId
fields[#fields + 1], fields[#fields + 2] = "next", string.format("%d", tonumber(nextRun))
return fields
