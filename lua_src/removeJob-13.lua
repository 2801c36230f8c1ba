--- Removes a job in any state, with its lock, its companion keys and its deduplication id.
--- Its parent stops waiting for it (and goes on when nothing else holds it). With
--- remove_children, its children go too, and theirs, to any depth: pending, completed and
--- failed alike. A job a worker holds (its lock exists), or with a descendant held, is refused
--- with 0; a job scheduler's current iteration, or a descendant that is one, answers -8 (remove
--- the scheduler instead).
--- @key wait              `emq:{q}:wait`              the wait list
--- @key paused            `emq:{q}:paused`            the paused list
--- @key active            `emq:{q}:active`            the active list
--- @key delayed           `emq:{q}:delayed`           the delayed set
--- @key prioritized       `emq:{q}:prioritized`       the prioritized set
--- @key completed         `emq:{q}:completed`         the completed set
--- @key failed            `emq:{q}:failed`            the failed set
--- @key waiting_children  `emq:{q}:waiting-children`  the waiting-children set
--- @key stalled           `emq:{q}:stalled`           the stalled set
--- @key events            `emq:{q}:events`            the event stream
--- @key meta              `emq:{q}:meta`              the queue's meta hash
--- @key schedulers        `emq:{q}:repeat`            the job schedulers, scored by next run
--- @key job               `emq:{q}:<job_id>`          the job's hash
--- @arg job_id           id    the job's id
--- @arg remove_children  bool  remove its children too, to any depth
--- @return int  1 when the job was removed, 0 when it, or one of the descendants to remove, is
---     held by a worker
--- @error -1 JobNotExist
--- @error -8 JobBelongsToJobScheduler
--- @include "includes/checkJobId"
--- @include "includes/deleteJob"
--- @include "includes/leaveParent"
--- @include "includes/queuePrefix"
--- @include "includes/schedulerJobId"

local waitKey, pausedKey, activeKey, delayedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local prioritizedKey, completedKey, failedKey, waitingChildrenKey = KEYS[5], KEYS[6], KEYS[7],
  KEYS[8]
local stalledKey, eventsKey, metaKey, schedulersKey, jobKey = KEYS[9], KEYS[10], KEYS[11],
  KEYS[12], KEYS[13]
local jobId, removeChildren = ARGV[1], ARGV[2] == "1"

-- A runtime that builds the keys itself must build them for one queue and this id: the script
-- deletes by them.
checkJobId(jobId, "job id")
local prefix = queuePrefix(waitKey)
local given = { waitKey, pausedKey, activeKey, delayedKey, prioritizedKey, completedKey, failedKey,
  waitingChildrenKey, stalledKey, eventsKey, metaKey, schedulersKey }
local names = { "wait", "paused", "active", "delayed", "prioritized", "completed", "failed",
  "waiting-children", "stalled", "events", "meta", "repeat" }
for i, name in ipairs(names) do
  if not prefix or given[i] ~= prefix .. name then
    error("key " .. given[i] .. " is not the queue's " .. name .. " key")
  end
end
if jobKey ~= prefix .. jobId then
  error("key " .. jobKey .. " is not the key of job '" .. jobId .. "'")
end
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end
local parentKey = redis.call("HGET", jobKey, "parentKey") or nil

-- Whether a job is a scheduler's current iteration, not finished: the scheduler moves on from
-- it (a finished one, whose next was never scheduled, an upsert moves past).
local function schedulersOwn(id)
  local schedulerId = redis.call("HGET", prefix .. id, "rjk")
  local millis = schedulerId and redis.call("ZSCORE", schedulersKey, schedulerId)
  return millis and schedulerJobId(schedulerId, millis) == id
    and not redis.call("ZSCORE", completedKey, id) and not redis.call("ZSCORE", failedKey, id)
end

-- The jobs to remove, the job first, then its descendants breadth first (no recursion: a tree of
-- any depth), each once. All are checked before the first is removed.
local doomed = { jobId }
local seen = { [jobId] = true }
local head = 1
while head <= #doomed do
  local id = doomed[head]
  head = head + 1
  if schedulersOwn(id) then
    return -8
  end
  if redis.call("EXISTS", prefix .. id .. ":lock") == 1 then
    return 0
  end
  if removeChildren then
    local key = prefix .. id
    local children = redis.call("SMEMBERS", key .. ":dependencies")
    local records = { redis.call("HKEYS", key .. ":processed"), redis.call("HKEYS", key .. ":failed"),
      redis.call("ZRANGE", key .. ":unsuccessful", 0, -1) }
    for _, record in ipairs(records) do
      for _, childKey in ipairs(record) do
        children[#children + 1] = childKey
      end
    end
    table.sort(children) -- sets and hashes have no order: sorted, so the events come the same
    for _, childKey in ipairs(children) do
      local childId = string.sub(childKey, #prefix + 1)
      -- A parent's records hold its own queue's job keys; anything else is not a child to take,
      -- nor is one whose job is gone (removed by its retention).
      if string.sub(childKey, 1, #prefix) == prefix and not seen[childId]
          and redis.call("EXISTS", childKey) == 1 then
        seen[childId] = true
        doomed[#doomed + 1] = childId
      end
    end
  end
end

local places = {}
for i = 1, 8 do
  places[i] = { given[i], names[i] } -- the eight states, in the keys' order
end
for _, id in ipairs(doomed) do
  deleteJob(prefix, id, redis.call("HGET", prefix .. id, "deid") or nil, places, stalledKey,
    eventsKey, metaKey)
end

-- Last, the parent outside the removed tree: it no longer waits for the job, pending or failed.
leaveParent(prefix, jobKey, parentKey)
return 1
