--- Schedules a job scheduler's next iteration once its current one was picked up: the worker
--- that picked it calls this with the job's id, and only the current iteration moves the
--- scheduler on, so workers that race, or a call sent twice, schedule one job; one still
--- waiting to be picked up moves nothing. An every
--- scheduler's next run is a period after the current one (or the next slot after now, when
--- runs were missed); a pattern's is next_millis, as the caller computed it. Nothing runs past
--- the limit or the end date.
--- @key schedulers   `emq:{q}:repeat`                 the job schedulers, scored by next run
--- @key scheduler    `emq:{q}:repeat:<scheduler_id>`  the scheduler's settings
--- @key wait         `emq:{q}:wait`                   the wait list
--- @key paused       `emq:{q}:paused`                 the paused list
--- @key delayed      `emq:{q}:delayed`                the delayed set
--- @key prioritized  `emq:{q}:prioritized`            the prioritized set
--- @key pc           `emq:{q}:pc`                     the counter that orders jobs of one priority
--- @key meta         `emq:{q}:meta`                   the queue's meta hash
--- @key events       `emq:{q}:events`                 the event stream
--- @key marker       `emq:{q}:marker`                 the marker idle workers block on
--- @arg scheduler_id  id        the scheduler's id (the picked job's "rjk")
--- @arg job_id        id        the iteration picked up
--- @arg now           int(0..) = @now  the caller's clock, in milliseconds
--- @arg next_millis   int(0..)  a pattern's next run after the current one, as the caller
---     computed it (0 for every)
--- @return string  the next iteration's id, or "" when none was added: the job is not the
---     current iteration (already moved on, or the scheduler removed), the limit or the end date
---     is reached, or the slot is taken (a `duplicated` event)
--- @include "includes/addSchedulerJob"
--- @include "includes/checkSchedulerKeys"
--- @include "includes/emitEvent"
--- @include "includes/everyNextRun"
--- @include "includes/intArg"
--- @include "includes/nowArg"
--- @include "includes/pendingIteration"
--- @include "includes/queuePrefix"
--- @include "includes/schedulerJobId"

local schedulersKey, schedulerKey, waitKey, pausedKey, delayedKey = KEYS[1], KEYS[2], KEYS[3],
  KEYS[4], KEYS[5]
local prioritizedKey, pcKey, metaKey, eventsKey, markerKey = KEYS[6], KEYS[7], KEYS[8], KEYS[9],
  KEYS[10]
local schedulerId, jobId, now = ARGV[1], ARGV[2], ARGV[3]
local nowMillis = nowArg(now)
local nextMillis = intArg(ARGV[4], "next_millis", 0)

checkSchedulerKeys(schedulersKey, schedulerKey, schedulerId)
local prefix = queuePrefix(schedulersKey)
local current = redis.call("ZSCORE", schedulersKey, schedulerId)
-- Only the current iteration, once picked up, moves the scheduler on: not one still waiting,
-- nor a job of its own that took the id.
if not current or schedulerJobId(schedulerId, current) ~= jobId
    or redis.call("HGET", prefix .. jobId, "rjk") ~= schedulerId
    or pendingIteration(prefix, schedulerId, jobId,
      { delayedKey, prioritizedKey, waitKey, pausedKey }) then
  return ""
end
current = tonumber(current)
local stored = redis.call("HMGET", schedulerKey, "every", "offset", "limit", "endDate", "ic",
  "name", "data", "opts", "priority")
local every, offset = tonumber(stored[1]) or 0, tonumber(stored[2]) or 0
local limit, endDate, iterations = tonumber(stored[3]) or 0, tonumber(stored[4]) or 0,
  tonumber(stored[5]) or 0
local runAt = nextMillis
if every > 0 then
  runAt = everyNextRun(current, every, nowMillis, offset, 0)
elseif runAt <= current then
  error("next_millis must be after the current iteration's run at " .. string.format("%d", current)
    .. ", got " .. ARGV[4])
end
if (limit > 0 and iterations >= limit) or (endDate > 0 and runAt > endDate) then
  return ""
end
local nextId = schedulerJobId(schedulerId, runAt)
if redis.call("EXISTS", prefix .. nextId) == 1 then
  emitEvent(eventsKey, metaKey, "duplicated", nextId)
  return ""
end
addSchedulerJob({ waitKey, pausedKey, delayedKey, prioritizedKey, pcKey, markerKey, eventsKey,
  metaKey }, prefix, schedulerId, runAt, now, stored[6], stored[7] or "{}", stored[8] or "{}",
  tonumber(stored[9]) or 0, redis.call("HEXISTS", metaKey, "paused") == 1)
redis.call("HSET", schedulerKey, "ic", string.format("%d", iterations + 1))
redis.call("ZADD", schedulersKey, string.format("%d", runAt), schedulerId)
return nextId
