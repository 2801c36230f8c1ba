--- Removes a job scheduler, with its iteration not yet picked up (a `removed` event); one
--- picked up, or back for a retry, runs on as a job of its own.
--- @key schedulers   `emq:{q}:repeat`                 the job schedulers, scored by next run
--- @key scheduler    `emq:{q}:repeat:<scheduler_id>`  the scheduler's settings
--- @key wait         `emq:{q}:wait`                   the wait list
--- @key paused       `emq:{q}:paused`                 the paused list
--- @key delayed      `emq:{q}:delayed`                the delayed set
--- @key prioritized  `emq:{q}:prioritized`            the prioritized set
--- @key events       `emq:{q}:events`                 the event stream
--- @key meta         `emq:{q}:meta`                   the queue's meta hash
--- @arg scheduler_id  id  the scheduler's id
--- @return int  1 when the scheduler was removed, 0 when there was none
--- @include "includes/checkSchedulerKeys"
--- @include "includes/pendingIteration"
--- @include "includes/queuePrefix"
--- @include "includes/removePendingIteration"
--- @include "includes/schedulerJobId"

local schedulersKey, schedulerKey, waitKey, pausedKey, delayedKey = KEYS[1], KEYS[2], KEYS[3],
  KEYS[4], KEYS[5]
local prioritizedKey, eventsKey, metaKey = KEYS[6], KEYS[7], KEYS[8]
local schedulerId = ARGV[1]

checkSchedulerKeys(schedulersKey, schedulerKey, schedulerId)
local current = redis.call("ZSCORE", schedulersKey, schedulerId)
if not current then
  return 0
end
local prefix = queuePrefix(schedulersKey)
local jobId = schedulerJobId(schedulerId, current)
local stateKey, state = pendingIteration(prefix, schedulerId, jobId,
  { delayedKey, prioritizedKey, waitKey, pausedKey })
if state then
  removePendingIteration(prefix, jobId, stateKey, state, eventsKey, metaKey)
end
redis.call("ZREM", schedulersKey, schedulerId)
redis.call("DEL", schedulerKey)
return 1
