--- Deletes a paused queue and everything in it, a bounded batch a call.
--- Each call removes up to `count` jobs (with their locks, companion keys and deduplication ids) and job
--- schedulers, and the call that finds nothing left deletes the queue's own keys. Refused while
--- the queue is not paused, and while jobs are active unless `force`.
--- @key wait               `emq:{q}:wait`               the wait list
--- @key paused             `emq:{q}:paused`             the paused list
--- @key active             `emq:{q}:active`             the active list
--- @key delayed            `emq:{q}:delayed`            the delayed set
--- @key prioritized        `emq:{q}:prioritized`        the prioritized set
--- @key completed          `emq:{q}:completed`          the completed set
--- @key failed             `emq:{q}:failed`             the failed set
--- @key waiting_children   `emq:{q}:waiting-children`   the waiting-children set
--- @key stalled            `emq:{q}:stalled`            the stalled set
--- @key events             `emq:{q}:events`             the event stream
--- @key meta               `emq:{q}:meta`               the queue's meta hash
--- @key schedulers         `emq:{q}:repeat`             the job schedulers, scored by next run
--- @key id                 `emq:{q}:id`                 the job id counter
--- @key pc                 `emq:{q}:pc`                 the priority counter
--- @key marker             `emq:{q}:marker`             the workers' marker
--- @key limiter            `emq:{q}:limiter`            the rate limiter's counter
--- @key metrics_completed  `emq:{q}:metrics:completed`  the completed metrics
--- @key metrics_failed     `emq:{q}:metrics:failed`     the failed metrics
--- @key metrics_completed_data  `emq:{q}:metrics:completed:data`  the completed series
--- @key metrics_failed_data     `emq:{q}:metrics:failed:data`     the failed series
--- @arg count  int(1..10000)  the most jobs and schedulers the call removes
--- @arg force  bool = false   remove active jobs too, held or not
--- @return int  0 when the queue is gone, 1 when more is left (call again), 2 when refused
---     because the queue is not paused, 3 when refused because jobs are active and `force` was
---     not given
--- @include "includes/checkQueueKeys"
--- @include "includes/eraseJob"
--- @include "includes/intArg"

local waitKey, pausedKey, activeKey, delayedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local prioritizedKey, completedKey, failedKey, waitingChildrenKey = KEYS[5], KEYS[6], KEYS[7],
  KEYS[8]
local stalledKey, eventsKey, metaKey, schedulersKey = KEYS[9], KEYS[10], KEYS[11], KEYS[12]
local idKey, pcKey, markerKey, limiterKey = KEYS[13], KEYS[14], KEYS[15], KEYS[16]
local metricsCompletedKey, metricsFailedKey = KEYS[17], KEYS[18]
local metricsCompletedDataKey, metricsFailedDataKey = KEYS[19], KEYS[20]
local count = intArg(ARGV[1], "count", 1, 10000)
local force = ARGV[2] == "1"

local prefix = checkQueueKeys({ waitKey, pausedKey, activeKey, delayedKey, prioritizedKey,
  completedKey, failedKey, waitingChildrenKey, stalledKey, eventsKey, metaKey, schedulersKey,
  idKey, pcKey, markerKey, limiterKey, metricsCompletedKey, metricsFailedKey,
  metricsCompletedDataKey, metricsFailedDataKey },
  { "wait", "paused", "active", "delayed", "prioritized", "completed", "failed",
    "waiting-children", "stalled", "events", "meta", "repeat", "id", "pc", "marker", "limiter",
    "metrics:completed", "metrics:failed", "metrics:completed:data", "metrics:failed:data" })

if redis.call("HEXISTS", metaKey, "paused") == 0 then
  return 2
end
if not force and redis.call("LLEN", activeKey) > 0 then
  return 3
end

-- Each key's first entries, as many as the budget allows, taken out together. A job's parent is
-- not told: it goes too, in this call or a later one.
local budget = count
local lists = { waitKey, pausedKey, activeKey }
for _, key in ipairs(lists) do
  if budget > 0 then
    local ids = redis.call("LRANGE", key, "0", tostring(budget - 1))
    for _, id in ipairs(ids) do
      if key == activeKey then
        redis.call("SREM", stalledKey, id)
      end
      eraseJob(prefix, id)
    end
    if #ids > 0 then
      redis.call("LTRIM", key, tostring(#ids), "-1")
    end
    budget = budget - #ids
  end
end
local sets = { delayedKey, prioritizedKey, completedKey, failedKey, waitingChildrenKey }
for _, key in ipairs(sets) do
  if budget > 0 then
    local ids = redis.call("ZRANGE", key, "0", tostring(budget - 1))
    for _, id in ipairs(ids) do
      eraseJob(prefix, id)
    end
    if #ids > 0 then
      redis.call("ZREMRANGEBYRANK", key, "0", tostring(#ids - 1))
    end
    budget = budget - #ids
  end
end
if budget > 0 then
  local ids = redis.call("ZRANGE", schedulersKey, "0", tostring(budget - 1))
  for _, id in ipairs(ids) do
    redis.call("DEL", prefix .. "repeat:" .. id)
  end
  if #ids > 0 then
    redis.call("ZREMRANGEBYRANK", schedulersKey, "0", tostring(#ids - 1))
  end
end

for _, key in ipairs(lists) do
  if redis.call("LLEN", key) > 0 then
    return 1
  end
end
sets[#sets + 1] = schedulersKey
for _, key in ipairs(sets) do
  if redis.call("ZCARD", key) > 0 then
    return 1
  end
end
redis.call("DEL", stalledKey, eventsKey, metaKey, idKey, pcKey, markerKey, limiterKey,
  metricsCompletedKey, metricsFailedKey, metricsCompletedDataKey, metricsFailedDataKey)
return 0
