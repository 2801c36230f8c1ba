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
--- @arg now           int(0..) = @now    the caller's clock, in milliseconds
--- @arg every         int(0..)           the period in ms, or 0 for a pattern
--- @arg pattern       string             a cron pattern, or "" for every
--- @arg tz            string = ""        the pattern's time zone (the caller reads it), or ""
--- @arg next_millis   int(0..) = 0       a pattern's next run, as the caller computed it (0 for
---     every)
--- @arg limit         int(0..) = 0       the most iterations to run, or 0 for no limit
--- @arg start_date    int(0..) = 0       no run before this time (ms), or 0
--- @arg end_date      int(0..) = 0       no run after this time (ms), or 0
--- @arg offset        int(0..) = 0       every: the runs' place within each period (ms), or 0
--- @arg name          string             the iterations' name
--- @arg data          json               the iterations' data: any JSON value
--- @arg opts          json(object) = {}  the iterations' options
--- @arg priority      int(0..2097151) = 0  the iterations' priority, or 0
--- @return tuple[string, int]  the pending iteration's id ("" once the limit or the end date is
---     reached), and when it runs
--- @error -10 SchedulerJobIdCollision
--- @error -11 SchedulerJobSlotsBusy
--- @include "includes/addSchedulerJob"
--- @include "includes/checkJobArgs"
--- @include "includes/checkSchedulerKeys"
--- @include "includes/digitsArg"
--- @include "includes/everyNextRun"
--- @include "includes/pendingIteration"
--- @include "includes/queuePrefix"
--- @include "includes/removePendingIteration"
--- @include "includes/schedulerJobId"

local schedulersKey, schedulerKey, waitKey, pausedKey, delayedKey = KEYS[1], KEYS[2], KEYS[3],
  KEYS[4], KEYS[5]
local prioritizedKey, pcKey, metaKey, eventsKey, markerKey = KEYS[6], KEYS[7], KEYS[8], KEYS[9],
  KEYS[10]
local schedulerId, now, pattern, tz = ARGV[1], ARGV[2], ARGV[4], ARGV[5]
-- The settings are stored as the caller sent them, decimal digits: a Lua number handed to Redis
-- is printed again, which costs more than the check.
local every = digitsArg(ARGV[3], "every", 0)
local nextMillis = digitsArg(ARGV[6], "next_millis", 0)
local limit = digitsArg(ARGV[7], "limit", 0)
local startDate = digitsArg(ARGV[8], "start_date", 0)
local endDate = digitsArg(ARGV[9], "end_date", 0)
local offset = digitsArg(ARGV[10], "offset", 0)
local name, data, opts = ARGV[11], ARGV[12], ARGV[13]
local priority = digitsArg(ARGV[14], "priority", 0, 2097151)

-- 1. The settings, refused before anything is written.
checkSchedulerKeys(schedulersKey, schedulerKey, schedulerId)
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
-- The settings' texts. A setting at the value that stands for none ("{}", "", "0") is not stored
-- (a hash of fewer fields costs the server less to write), and reads as it. Each is named below
-- rather than walked in a table of settings: tables built on every call cost the server more.
local priorityText, everyText, limitText, startText, endText = ARGV[14], ARGV[3], ARGV[7],
  ARGV[8], ARGV[9]

-- 2. What there is: the scheduler's settings and its current iteration. The same settings
-- change nothing while that iteration lives (waits, or runs: its worker schedules the next);
-- one that is gone, or finished without a next, is followed by a new one.
local prefix = queuePrefix(schedulersKey)
local previous = redis.call("ZSCORE", schedulersKey, schedulerId)
local stored = {}
local currentId, pendingKey, pendingState = nil, nil, nil
if previous then
  previous = tonumber(previous)
  currentId = schedulerJobId(schedulerId, previous)
  local flat = redis.call("HGETALL", schedulerKey)
  for i = 1, #flat, 2 do
    stored[flat[i]] = flat[i + 1]
  end
  -- The offset given, or none: the one stored was found from the first run.
  local same = stored.name == name and (stored.data or "{}") == data
    and (stored.opts or "{}") == opts and (stored.priority or "0") == priorityText
    and (stored.every or "0") == everyText and (stored.pattern or "") == pattern
    and (stored.tz or "") == tz and (stored.limit or "0") == limitText
    and (stored.startDate or "0") == startText and (stored.endDate or "0") == endText
    and (offset == 0 or (tonumber(stored.offset) or 0) == offset)
  local live = redis.call("HGET", prefix .. currentId, "rjk") == schedulerId
    and not redis.call("ZSCORE", prefix .. "completed", currentId)
    and not redis.call("ZSCORE", prefix .. "failed", currentId)
  if same and live then
    return { currentId, previous }
  end
  pendingKey, pendingState = pendingIteration(prefix, schedulerId, currentId,
    { delayedKey, prioritizedKey, waitKey, pausedKey })
end

-- 3. The next run, and its slot: an iteration's id is its time, so a job that holds the id (an
-- earlier run kept by its retention, or the current one running) takes the slot. An every
-- scheduler tries the slots after it, a pattern's is refused. An every scheduler whose period,
-- offset and start are unchanged keeps its time: the pending iteration's, or the next after the
-- current one.
local runAt = nextMillis
if every > 0 then
  if previous and tonumber(stored.every) == every
      and (tonumber(stored.startDate) or 0) == startDate
      and (offset == 0 or (tonumber(stored.offset) or 0) == offset) then
    offset = tonumber(stored.offset) or offset
    runAt = pendingState and previous or everyNextRun(previous, every, nowMillis, offset, 0)
  else
    runAt, offset = everyNextRun(nil, every, nowMillis, offset, startDate)
  end
end
local iterations = tonumber(stored.ic) or 0
if pendingState then
  iterations = iterations - 1 -- the one replaced does not count
end
local ended = (limit > 0 and iterations >= limit) or (endDate > 0 and runAt > endDate)
-- A slot is taken by a job that holds its id, but for the iteration being replaced, which frees
-- it; one that runs on holds it, as any job does. An every scheduler tries 32 slots after its
-- own.
local scanned = 0
while not ended do
  local id = schedulerJobId(schedulerId, runAt)
  if (pendingState and id == currentId) or redis.call("EXISTS", prefix .. id) == 0 then
    break
  end
  if every == 0 then
    return -10
  end
  if scanned == 32 then
    return -11
  end
  runAt, scanned = runAt + every, scanned + 1
  ended = endDate > 0 and runAt > endDate
end

-- 4. The writes: the iteration replaced goes, the settings are stored, and the next one added.
if pendingState then
  removePendingIteration(prefix, currentId, pendingKey, pendingState, eventsKey, metaKey)
end
local jobId = ""
if not ended then
  jobId = addSchedulerJob({ waitKey, pausedKey, delayedKey, prioritizedKey, pcKey, markerKey,
    eventsKey, metaKey }, prefix, schedulerId, runAt, now, name, data, opts, priority,
    redis.call("HEXISTS", metaKey, "paused") == 1)
  iterations = iterations + 1
elseif previous then
  runAt = previous -- nothing more runs: the scheduler keeps the time of its current iteration
end
if previous then
  redis.call("DEL", schedulerKey) -- fields a setting no longer has go with the old ones
end
local fields = { "name", name, "ic", string.format("%d", iterations) }
local function keep(field, text, none)
  if text ~= none then
    fields[#fields + 1], fields[#fields + 2] = field, text
  end
end
keep("offset", string.format("%d", offset), "0")
keep("data", data, "{}")
keep("opts", opts, "{}")
keep("priority", priorityText, "0")
keep("every", everyText, "0")
keep("pattern", pattern, "")
keep("tz", tz, "")
keep("limit", limitText, "0")
keep("startDate", startText, "0")
keep("endDate", endText, "0")
redis.call("HSET", schedulerKey, unpack(fields))
redis.call("ZADD", schedulersKey, string.format("%d", runAt), schedulerId)
return { jobId, runAt }
