--- Completes or fails an active job, and optionally picks the next one up in the same call.
--- Verifies the lock token first, then that the job exists and is active. A completion stores the
--- return value; a failure stores the reason and stack trace and, while attempts are left, goes
--- to delayed with a backoff instead of to failed. A finished job is scored by its finish time,
--- counted in the metrics, kept or removed by removeOnComplete / removeOnFail, and releases its
--- deduplication id. A completed child that was its parent's last pending one moves the parent
--- out of waiting-children; a child that fails for good leaves its parent waiting.
--- @key wait              `emq:{q}:wait`              the wait list
--- @key active            `emq:{q}:active`            the active list
--- @key prioritized       `emq:{q}:prioritized`       the prioritized set
--- @key events            `emq:{q}:events`            the event stream
--- @key stalled           `emq:{q}:stalled`           the stalled set
--- @key limiter           `emq:{q}:limiter`           the rate limiter's counter
--- @key delayed           `emq:{q}:delayed`           the delayed set, scored by run-at
--- @key paused            `emq:{q}:paused`            the paused list
--- @key meta              `emq:{q}:meta`              the queue's meta hash
--- @key pc                `emq:{q}:pc`                the counter that orders jobs of one priority
--- @key marker            `emq:{q}:marker`            the marker idle workers block on
--- @key finished          `emq:{q}:<outcome>`         the completed or the failed set
--- @key metrics           `emq:{q}:metrics:<outcome>` the count of completed or of failed jobs
--- @key waiting_children  `emq:{q}:waiting-children`  the waiting-children set
--- @arg job_id          string  the job's id
--- @arg token           string  the worker's lock token
--- @arg now             int     the caller's clock, in milliseconds
--- @arg outcome         string  "completed" or "failed"
--- @arg result          string  the return value (JSON) or the failure reason
--- @arg stacktrace      string  the failure's stack trace, or ""
--- @arg jitter          number  a fraction in [0, 1) of the retry delay to add (0: none)
--- @arg fetch_next      bool    pick the next job up for the same worker
--- @arg lock_duration   int     the next job's lock time to live, in milliseconds
--- @arg limit_max       int     at most this many jobs per limit_duration (0: no limit)
--- @arg limit_duration  int     the rate limiter's window, in milliseconds
--- @arg concurrency     int     at most this many jobs active in the queue (0: no cap)
--- @return tuple[string, string, hash, int]  where the job went ("completed", "failed" or "delayed"), then the next job as moveToActive answers it
--- @error -1 JobNotExist
--- @error -2 JobLockNotExist
--- @error -3 JobNotInState
--- @error -6 JobLockMismatch
--- @include "includes/prefix"
--- @include "includes/numbers"
--- @include "includes/options"
--- @include "includes/lock"
--- @include "includes/backoff"
--- @include "includes/retention"
--- @include "includes/dedup"
--- @include "includes/pickup"

local queue = {
  wait = KEYS[1], active = KEYS[2], prioritized = KEYS[3], events = KEYS[4],
  stalled = KEYS[5], limiter = KEYS[6], delayed = KEYS[7], paused = KEYS[8],
  meta = KEYS[9], pc = KEYS[10], marker = KEYS[11], prefix = queuePrefix(KEYS[1]),
}
local jobId, token, now, outcome = ARGV[1], ARGV[2], numberArg(ARGV[3], "now"), ARGV[4]
local jitter = numberArg(ARGV[7], "jitter")
local limits = {
  max = numberArg(ARGV[10], "limit_max"),
  duration = numberArg(ARGV[11], "limit_duration"),
  concurrency = numberArg(ARGV[12], "concurrency"),
}
local lockDuration = numberArg(ARGV[9], "lock_duration")
local jobKey = queue.prefix .. jobId
if outcome ~= "completed" and outcome ~= "failed" then
  return redis.error_reply("ERR outcome must be 'completed' or 'failed'")
end

local lockState = checkLock(jobKey .. ":lock", token)
if lockState ~= 0 then
  return lockState
end
if redis.call("EXISTS", jobKey) == 0 then
  return -1
end
-- Read before anything is written: a failure past this point would leave the job nowhere.
local stored = redis.call("HMGET", jobKey, "opts", "parentKey", "deid", "atm")
local opts = jobOptions(stored[1])
local parentKey, dedupId = stored[2], stored[3]
local attemptsMade = (tonumber(stored[4]) or 0) + 1
if redis.call("LREM", queue.active, -1, jobId) == 0 then
  return -3
end
redis.call("DEL", jobKey .. ":lock")
redis.call("SREM", queue.stalled, jobId)

local state = outcome

local function releaseParent()
  if not parentKey then
    return
  end
  redis.call("SREM", parentKey .. ":dependencies", jobKey)
  redis.call("HSET", parentKey .. ":processed", jobKey, ARGV[5])
  local parentId = string.sub(parentKey, #queue.prefix + 1)
  if redis.call("SCARD", parentKey .. ":dependencies") == 0
    and redis.call("ZREM", KEYS[14], parentId) == 1 then
    local priority = tonumber(redis.call("HGET", parentKey, "priority")) or 0
    enqueueReady(queue, parentId, priority)
    emitEvent(queue.events, queue.meta, "waiting", parentId, "prev", "waiting-children")
  end
end

if outcome == "failed" and attemptsMade < (tonumber(opts.attempts) or 1) then
  local base = type(opts.backoff) == "table" and tonumber(opts.backoff.delay) or 0
  local delay = backoffDelay(base, attemptsMade, jitter)
  redis.call("HSET", jobKey, "atm", attemptsMade, "failedReason", ARGV[5], "stacktrace", ARGV[6],
    "delay", delay)
  redis.call("ZADD", queue.delayed, now + delay, jobId)
  signalWork(queue.marker, now + delay)
  emitEvent(queue.events, queue.meta, "delayed", jobId, "delay", delay, "prev", "active")
  state = "delayed"
else
  if outcome == "completed" then
    redis.call("HSET", jobKey, "atm", attemptsMade, "returnvalue", ARGV[5], "finishedOn", now)
    releaseParent()
  else
    redis.call("HSET", jobKey, "atm", attemptsMade, "failedReason", ARGV[5], "stacktrace",
      ARGV[6], "finishedOn", now)
  end
  redis.call("ZADD", KEYS[12], now, jobId)
  redis.call("INCR", KEYS[13])
  releaseDedupId(queue.prefix, jobId, dedupId)
  emitEvent(queue.events, queue.meta, outcome, jobId, "prev", "active")
  local rule = opts.removeOnFail
  if outcome == "completed" then
    rule = opts.removeOnComplete
  end
  applyRetention(KEYS[12], queue.prefix, jobId, rule, now)
end
local nextJob = { "", {}, 0 }
if ARGV[8] == "1" then
  nextJob = pickup(queue, token, lockDuration, now, limits)
end
return { state, nextJob[1], nextJob[2], nextJob[3] }
