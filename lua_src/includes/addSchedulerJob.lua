--- @include "createJob"
--- @include "enqueueNewJob"
--- @include "schedulerJobId"

-- Adds the iteration of job scheduler `schedulerId` due at `runAt` (ms), from its template
-- (`name`, `data`, `opts`, `priority`), created at `now` (the caller's text): a job whose
-- "rjk" names the scheduler, to delayed when it is due later, else where a ready job goes.
-- `keys` are enqueueNewJob's. Returns its id.
local function addSchedulerJob(keys, prefix, schedulerId, runAt, now, name, data, opts, priority,
    paused)
  local jobId = schedulerJobId(schedulerId, runAt)
  local delay = math.max(runAt - tonumber(now), 0)
  local fields = { "rjk", schedulerId }
  if delay > 0 then
    fields[#fields + 1], fields[#fields + 2] = "delay", delay
  end
  if priority > 0 then
    fields[#fields + 1], fields[#fields + 2] = "priority", priority
  end
  createJob(prefix .. "id", prefix, jobId, name, data, opts, now, "", {}, fields, nil)
  enqueueNewJob(keys, jobId, name, delay, delay > 0 and runAt or nil, priority, paused, opts)
  return jobId
end
