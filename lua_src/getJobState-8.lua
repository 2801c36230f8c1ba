--- Tells which of the eight states holds a job.
--- @key wait              the wait list, emq:{q}:wait
--- @key paused            the paused list, emq:{q}:paused
--- @key active            the active list, emq:{q}:active
--- @key delayed           the delayed sorted set, emq:{q}:delayed
--- @key prioritized       the prioritized sorted set, emq:{q}:prioritized
--- @key completed         the completed sorted set, emq:{q}:completed
--- @key failed            the failed sorted set, emq:{q}:failed
--- @key waiting_children  the waiting-children sorted set, emq:{q}:waiting-children
--- @arg job_id  string  the job's id
--- @return string  the state's name ("wait", ..., "waiting-children"), or "unknown"
--- @include "includes/jobState"

local listStates = {
  { "wait", KEYS[1] },
  { "paused", KEYS[2] },
  { "active", KEYS[3] },
}
local sortedSetStates = {
  { "delayed", KEYS[4] },
  { "prioritized", KEYS[5] },
  { "completed", KEYS[6] },
  { "failed", KEYS[7] },
  { "waiting-children", KEYS[8] },
}
return jobState(ARGV[1], listStates, sortedSetStates)
