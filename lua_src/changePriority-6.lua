--- Gives a job a new priority (0: none). A job waiting to run (in wait, paused or prioritized)
--- moves to where that priority puts it: prioritized, last of its priority, or with lifo first
--- of it; with none, wait (paused while the queue is paused), last in line, or with lifo next.
--- A job in any other state only has its hash's priority changed: it is read when the job next
--- becomes ready (a delayed job due, a retry, a parent released).
--- @key wait         `emq:{q}:wait`         the wait list
--- @key paused       `emq:{q}:paused`       the paused list
--- @key prioritized  `emq:{q}:prioritized`  the prioritized set
--- @key pc           `emq:{q}:pc`           the counter that orders jobs of one priority
--- @key meta         `emq:{q}:meta`         the queue's meta hash
--- @key marker       `emq:{q}:marker`       the marker idle workers block on
--- @arg job_id    id                 the job's id
--- @arg priority  int(0..2097151)    the new priority: 1 runs first, 0 is none
--- @arg lifo      bool = false       first of its priority (or next in wait) instead of last
--- @return int  0 when the priority was changed
--- @error -1 JobNotExist
--- @include "includes/checkJobId"
--- @include "includes/intArg"
--- @include "includes/pushPrioritized"
--- @include "includes/pushPrioritizedFirst"
--- @include "includes/pushReady"
--- @include "includes/queuePrefix"

local waitKey, pausedKey, prioritizedKey, pcKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local metaKey, markerKey = KEYS[5], KEYS[6]
local jobId, priority = ARGV[1], intArg(ARGV[2], "priority", 0, 2097151)
local lifo = ARGV[3] == "1"

checkJobId(jobId, "job id") -- the job's key is built from it
local jobKey = queuePrefix(waitKey) .. jobId
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end
local priorityText = string.format("%d", priority)
if priority > 0 then
  redis.call("HSET", jobKey, "priority", priorityText)
else
  redis.call("HDEL", jobKey, "priority") -- no field is no priority, as an add without one
end
local ready = redis.call("ZREM", prioritizedKey, jobId) == 1
  or redis.call("LREM", waitKey, "-1", jobId) == 1
  or redis.call("LREM", pausedKey, "-1", jobId) == 1
if not ready then
  return 0
end
local paused = redis.call("HEXISTS", metaKey, "paused") == 1
if priority == 0 and lifo then
  pushReady(waitKey, pausedKey, markerKey, paused, jobId, true)
elseif priority == 0 then
  pushReady(waitKey, pausedKey, markerKey, paused, jobId)
elseif lifo then
  pushPrioritizedFirst(prioritizedKey, markerKey, paused, jobId, priority)
else
  pushPrioritized(prioritizedKey, pcKey, markerKey, paused, jobId, priority)
end
return 0
