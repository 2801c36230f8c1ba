--- Removes a job in any state, with its lock, its companion keys and its deduplication id.
--- Its parent stops waiting for it (and goes on when nothing else holds it). With
--- remove_children, its children go too, and theirs, to any depth: pending, completed and
--- failed alike, from the bottom up, at most `limit` jobs a call; a tree larger than that takes
--- more calls, each answering 2 until the last removes the job. A job a worker holds (its lock
--- exists), or a descendant held that the call reaches, is refused with 0; a job scheduler's
--- current iteration, or such a descendant, answers -8 (remove the scheduler instead).
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
--- @arg remove_children  bool = false  remove its children too, to any depth
--- @arg limit            int(1..10000)  the most jobs this call removes (and about the most it reads)
--- @return int  1 when the job was removed, 2 when part of its tree was and a next call goes on,
---     0 when it, or a descendant the call reached, is held by a worker
--- @error -1 JobNotExist
--- @error -8 JobBelongsToJobScheduler
--- @include "includes/checkJobKey"
--- @include "includes/checkQueueKeys"
--- @include "includes/deleteJobs"
--- @include "includes/intArg"
--- @include "includes/leaveParent"
--- @include "includes/schedulerIteration"
--- @include "includes/treeBatch"

local waitKey, pausedKey, activeKey, delayedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local prioritizedKey, completedKey, failedKey, waitingChildrenKey = KEYS[5], KEYS[6], KEYS[7],
  KEYS[8]
local stalledKey, eventsKey, metaKey, schedulersKey, jobKey = KEYS[9], KEYS[10], KEYS[11],
  KEYS[12], KEYS[13]
local jobId, removeChildren = ARGV[1], ARGV[2] == "1"
local limit = intArg(ARGV[3], "limit", 1, 10000)

-- A runtime that builds the keys itself must build them for one queue and this id: the script
-- deletes by them.
local names = { "wait", "paused", "active", "delayed", "prioritized", "completed", "failed",
  "waiting-children", "stalled", "events", "meta", "repeat" }
local queueKeys = { waitKey, pausedKey, activeKey, delayedKey, prioritizedKey, completedKey,
  failedKey, waitingChildrenKey, stalledKey, eventsKey, metaKey, schedulersKey }
local prefix = checkQueueKeys(queueKeys, names)
if checkJobKey(jobKey, jobId, "") ~= prefix then -- the job's key, but in another queue
  error("key " .. jobKey .. " is not the key of job '" .. jobId .. "' in this queue")
end
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end

-- Refuses a job a scheduler moves on from (its current iteration, not finished: a finished one,
-- whose next was never scheduled, an upsert moves past) and a job a worker holds.
local function refused(id)
  if schedulerIteration(prefix, schedulersKey, id) and not redis.call("ZSCORE", completedKey, id)
      and not redis.call("ZSCORE", failedKey, id) then
    return -8
  end
  if redis.call("EXISTS", prefix .. id .. ":lock") == 1 then
    return 0
  end
end
local code = refused(jobId)
if code then
  return code
end
local parts = removeChildren and { "dependencies", "processed", "failed", "unsuccessful" } or {}
local batch = treeBatch(prefix, jobId, parts, limit, true,
  function(id) return refused(id) or "take" end)
if type(batch) == "number" then
  return batch -- a descendant refused: nothing written
end

local places = {}
for i = 1, 8 do
  places[i] = { queueKeys[i], names[i] } -- the eight states, in the keys' order
end
local parentKey = redis.call("HGET", jobKey, "parentKey") or nil
deleteJobs(prefix, batch, places, stalledKey, eventsKey, metaKey)
if batch[#batch] ~= jobId then -- taken, the job is last
  return 2 -- the job stays: a next call goes on with what this one left
end
-- The job, last: its parent outside the tree no longer waits for it, pending or failed.
leaveParent(prefix, jobKey, parentKey)
return 1
