--- Creates or updates a job scheduler, and schedules its next iteration: exactly one job.
--- A scheduler runs `every` ms (from start_date, or keeping an offset within each period) or on
--- a cron pattern, whose next run the caller computes (next_millis: time comes in ARGV), up to a
--- limit of iterations and an end date. Its iterations are jobs from its template, with the ids
--- "repeat-<scheduler_id>-<run at>". Upserted again with the same settings, it changes nothing.
--- With new settings, an iteration not yet picked up is replaced (an every scheduler whose
--- period is unchanged keeps its time); one picked up runs on.
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
--- @arg scheduler_id  id                 the scheduler's id
--- @arg now           int(0..)           the caller's clock, in milliseconds
--- @arg every         int(0..)           the period in ms, or 0 for a pattern
--- @arg pattern       string             a cron pattern, or "" for every
--- @arg tz            string             the pattern's time zone (the caller reads it), or ""
--- @arg next_millis   int(0..)           a pattern's next run, as the caller computed it (0 for
---     every)
--- @arg limit         int(0..)           the most iterations to run, or 0 for no limit
--- @arg start_date    int(0..)           no run before this time (ms), or 0
--- @arg end_date      int(0..)           no run after this time (ms), or 0
--- @arg offset        int(0..)           every: the runs' place within each period (ms), or 0
--- @arg name          string             the iterations' name
--- @arg data          string             the iterations' data, as JSON
--- @arg opts          json(object)       the iterations' options
--- @arg priority      int(0..2097151)    the iterations' priority, or 0
--- @return tuple[string, int]  the pending iteration's id ("" once the limit or the end date is
---     reached), and when it runs
--- @error -10 SchedulerJobIdCollision
--- @error -11 SchedulerJobSlotsBusy
--- @include "includes/addSchedulerJob"
--- @include "includes/checkJobArgs"
--- @include "includes/checkJobId"
--- @include "includes/emitEvent"
--- @include "includes/everyNextRun"
--- @include "includes/intArg"
--- @include "includes/queuePrefix"
--- @include "includes/removeJobKeys"
--- @include "includes/schedulerJobId"

local schedulersKey, schedulerKey, waitKey, pausedKey, delayedKey = KEYS[1], KEYS[2], KEYS[3],
  KEYS[4], KEYS[5]
local prioritizedKey, pcKey, metaKey, eventsKey, markerKey = KEYS[6], KEYS[7], KEYS[8], KEYS[9],
  KEYS[10]
local schedulerId, now, pattern, tz = ARGV[1], ARGV[2], ARGV[4], ARGV[5]
local every = intArg(ARGV[3], "every", 0)
local nextMillis = intArg(ARGV[6], "next_millis", 0)
local limit = intArg(ARGV[7], "limit", 0)
local startDate = intArg(ARGV[8], "start_date", 0)
local endDate = intArg(ARGV[9], "end_date", 0)
local offset = intArg(ARGV[10], "offset", 0)
local name, data, opts = ARGV[11], ARGV[12], ARGV[13]
local priority = intArg(ARGV[14], "priority", 0, 2097151)

-- 1. The settings, refused before anything is written.
checkJobId(schedulerId, "scheduler id")
-- The template's options as an add's: a scheduler's iterations take no deduplication id.
checkJobArgs("", opts, now, "")
local nowMillis = tonumber(now)
if (every > 0) == (pattern ~= "") then
  error("a job scheduler runs either every N ms or on a pattern: give one of every and pattern")
end
if pattern ~= "" and nextMillis == 0 then
  error("a pattern scheduler needs next_millis, its next run as the caller computed it")
end
if every > 0 and offset >= every then
  error("offset must be less than every, got " .. offset .. " and " .. every)
end
local settings = {
  "name", name, "data", data, "opts", opts, "priority", tostring(priority), "every",
  tostring(every), "pattern", pattern, "tz", tz, "limit", tostring(limit), "startDate",
  tostring(startDate), "endDate", tostring(endDate),
}

-- 2. What there is: the scheduler's settings, its current iteration, and whether that one is
-- still waiting to be picked up (then it is replaced).
local prefix = queuePrefix(schedulersKey)
local previous = redis.call("ZSCORE", schedulersKey, schedulerId)
local stored = {}
if previous then
  previous = tonumber(previous)
  local flat = redis.call("HGETALL", schedulerKey)
  for i = 1, #flat, 2 do
    stored[flat[i]] = flat[i + 1]
  end
  local same = true
  for i = 1, #settings, 2 do
    same = same and stored[settings[i]] == settings[i + 1]
  end
  -- The offset given, or none: the one stored was found from the first run.
  same = same and (offset == 0 or tonumber(stored.offset) == offset)
  if same then
    local current = schedulerJobId(schedulerId, previous)
    return { redis.call("EXISTS", prefix .. current) == 1 and current or "", previous }
  end
end
local pendingId, pendingKey, pendingState = nil, nil, nil
if previous then
  pendingId = schedulerJobId(schedulerId, previous)
  for _, place in ipairs({ { delayedKey, "delayed" }, { prioritizedKey, "prioritized" } }) do
    if not pendingState and redis.call("ZSCORE", place[1], pendingId) then
      pendingKey, pendingState = place[1], place[2]
    end
  end
  for _, place in ipairs({ { waitKey, "wait" }, { pausedKey, "paused" } }) do
    if not pendingState and redis.call("LPOS", place[1], pendingId) then
      pendingKey, pendingState = place[1], place[2]
    end
  end
end

-- 3. The next run, and its slot: an iteration's id is its time, so a job that holds the id (an
-- earlier run kept by its retention) takes the slot. An every scheduler tries the slots after
-- it, a pattern's is refused.
local runAt = nextMillis
if every > 0 then
  if pendingState and tonumber(stored.every) == every then
    runAt = previous
    offset = tonumber(stored.offset) or offset
  else
    runAt, offset = everyNextRun(nil, every, nowMillis, offset, startDate)
  end
end
local iterations = tonumber(stored.ic) or 0
if pendingState then
  iterations = iterations - 1 -- the one replaced does not count
end
local ended = (limit > 0 and iterations >= limit) or (endDate > 0 and runAt > endDate)
local function taken(id)
  return id ~= pendingId and redis.call("EXISTS", prefix .. id) == 1
end
if not ended and taken(schedulerJobId(schedulerId, runAt)) then
  if every == 0 then
    return -10
  end
  local scanned = 0
  repeat
    runAt, scanned = runAt + every, scanned + 1
  until scanned == 32 or not taken(schedulerJobId(schedulerId, runAt))
  if taken(schedulerJobId(schedulerId, runAt)) then
    return -11
  end
  ended = endDate > 0 and runAt > endDate
end

-- 4. The writes: the iteration replaced goes, the settings are stored, and the next one added.
if pendingState then
  if pendingState == "wait" or pendingState == "paused" then
    redis.call("LREM", pendingKey, 0, pendingId)
  else
    redis.call("ZREM", pendingKey, pendingId)
  end
  removeJobKeys(prefix, pendingId)
  emitEvent(eventsKey, metaKey, "removed", pendingId, "prev", pendingState)
end
local jobId = ""
if not ended then
  jobId = addSchedulerJob({ waitKey, pausedKey, delayedKey, prioritizedKey, pcKey, markerKey,
    eventsKey, metaKey }, prefix, schedulerId, runAt, now, name, data, opts, priority,
    redis.call("HEXISTS", metaKey, "paused") == 1)
  iterations = iterations + 1
elseif previous and not pendingState then
  runAt = previous -- nothing more runs: the scheduler keeps the time of its last run
end
redis.call("DEL", schedulerKey)
redis.call("HSET", schedulerKey, "offset", tostring(offset), "ic", tostring(iterations),
  unpack(settings))
redis.call("ZADD", schedulersKey, runAt, schedulerId)
return { jobId, runAt }
