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
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait", "emq:{q}:7:lock"),
-- or nil when the key is not one of a queue's: job keys are built from it, so they carry the
-- queue's hash tag and land on its Cluster slot. The scripts that delete by the keys a runtime
-- passes check each against it.
local function queuePrefix(key)
  return string.match(key, "^(emq:{[^{}]*}:)")
end

-- Refuses, with a Lua error, keys that are not the queue's keys of the names given (`keys[i]`
-- must be `<prefix><names[i]>`, one prefix for all): the walks delete by the keys a runtime
-- passes, and a runtime that builds them itself must build them for one queue. Returns the
-- queue's prefix.
local function checkQueueKeys(keys, names)
  local prefix = queuePrefix(keys[1])
  for i, name in ipairs(names) do
    if not prefix or keys[i] ~= prefix .. name then
      error("key " .. keys[i] .. " is not the queue's " .. name .. " key")
    end
  end
  return prefix
end
-- Releases the deduplication id that a job being removed held (`dedupId`, its "deid" field, or
-- nil), TTL or not, unless another job holds it by now; an add kept for when it finished
-- (keepLastIfActive) goes with it.
local function releaseDedupId(prefix, jobId, dedupId)
  if dedupId and redis.call("GET", prefix .. "de:" .. dedupId) == jobId then
    redis.call("DEL", prefix .. "de:" .. dedupId, prefix .. "dn:" .. dedupId)
  end
end
-- Deletes a job's hash and its companion keys: its lock, its logs, and a parent's :dependencies,
-- :processed, :failed (ignored children) and :unsuccessful (failed children).
local function removeJobKeys(prefix, jobId)
  local jobKey = prefix .. jobId
  redis.call("DEL", jobKey, jobKey .. ":lock", jobKey .. ":logs", jobKey .. ":dependencies",
    jobKey .. ":processed", jobKey .. ":failed", jobKey .. ":unsuccessful")
end

-- Deletes what a job has besides its place in a state key, which the caller (a walk that takes
-- many jobs out of one key at a time) removes itself: its deduplication id released as on
-- removal, its hash and its companion keys. Returns its "parentKey", or nil: the caller tells
-- the parent once its own writes to the state key are done, since a parent it releases may go
-- to the key it walks.
local function eraseJob(prefix, jobId)
  local fields = redis.call("HMGET", prefix .. jobId, "deid", "parentKey")
  releaseDedupId(prefix, jobId, fields[1] or nil)
  removeJobKeys(prefix, jobId)
  return fields[2] or nil
end
-- The argument checkers, intArg and the other *Arg includes, return the value or raise a Lua
-- error that names the argument: scripts read their arguments before they write anything, so a
-- caller's mistake never leaves a job half-moved. Every bound is also in the script's header, so
-- the generated wrappers refuse the same values before sending them.

-- Integers stop at 2^53 - 1, the largest a Lua number holds exactly.
local MAX_INTEGER = 9007199254740991

-- An integer argument from `low` to `high` (nil: 2^53 - 1).
local function intArg(value, name, low, high)
  local number = tonumber(value)
  high = high or MAX_INTEGER
  if not number or number % 1 ~= 0 or number < low or number > high then
    local upTo = high == MAX_INTEGER and "2^53 - 1" or tostring(high)
    error(name .. " must be an integer from " .. low .. " to " .. upTo .. ", got '"
      .. tostring(value) .. "'")
  end
  return number
end

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
