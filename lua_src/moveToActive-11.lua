--- Picks the next job up and locks it: the pickup step of a worker.
--- Promotes due delayed jobs first; then, unless the queue is paused, the rate limiter is spent
--- or the concurrency cap is reached (the queue's own, stored in its meta hash, or else the
--- caller's), takes the next job (wait first, else the best priority,
--- FIFO within a priority), locks it for the worker's token, and moves it to active. A token
--- names one pickup: re-sent with a token that still holds its job, it answers that job again
--- and takes no other.
--- @key wait         `emq:{q}:wait`         the wait list
--- @key active       `emq:{q}:active`       the active list
--- @key prioritized  `emq:{q}:prioritized`  the prioritized set
--- @key events       `emq:{q}:events`       the event stream
--- @key stalled      (unused) `emq:{q}:stalled`  the stalled set: every path out of active clears
---     a job's mark, so a job taken from wait or prioritized has none
--- @key limiter      `emq:{q}:limiter`      the rate limiter's counter
--- @key delayed      `emq:{q}:delayed`      the delayed set, scored by run-at
--- @key paused       `emq:{q}:paused`       the paused list
--- @key meta         `emq:{q}:meta`         the queue's meta hash
--- @key pc           `emq:{q}:pc`           the counter that orders jobs of one priority
--- @key marker       `emq:{q}:marker`       the marker idle workers block on
--- @arg token          string(non-empty) = @token  the worker's lock token, new for every pickup
--- @arg lock_duration  int(1..) = 30000   how long the lock lives without a heartbeat, in
---     milliseconds
--- @arg now            int(0..) = @now    the caller's clock, in milliseconds
--- @arg limit_max      int(0..) = 0       at most this many jobs per limit_duration (0: no limit);
---     a rate limit the queue stores replaces it and limit_duration
--- @arg limit_duration int(0..) = 0       the rate limiter's window, in milliseconds
--- @arg concurrency    int(0..) = 0       at most this many jobs active in the queue (0: no cap);
---     a cap the queue stores holds too
--- @return Pickup(job_id: string, fields: hash, limit_delay: int, token: string)  the job's id
---     and fields, or "" and {} and the milliseconds until the rate limiter allows a job (0:
---     nothing to pick up now: empty, paused, or at the concurrency cap); and the token, which
---     the job's heartbeats and its finish take (a runtime that drew it learns it here)
--- @include "includes/digitsArg"
--- @include "includes/heldJob"
--- @include "includes/intArg"
--- @include "includes/nowArg"
--- @include "includes/pickup"
--- @include "includes/queuePrefix"
--- @include "includes/tokenArg"

local waitKey, activeKey, prioritizedKey, eventsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
-- KEYS[5], the stalled set, is not read (see its @key line).
local limiterKey, delayedKey, pausedKey, metaKey = KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local pcKey, markerKey = KEYS[10], KEYS[11]
local token = tokenArg(ARGV[1])
-- Both as the caller sent them: Redis reads them (see includes/pickup.lua).
local lockDuration, now = ARGV[2], ARGV[3]
digitsArg(lockDuration, "lock_duration", 1)
nowArg(now)
-- "0", the usual value, is read without a call (a call of intArg costs more than the rest of
-- the check, make bench).
local limitMax = ARGV[4] == "0" and 0 or intArg(ARGV[4], "limit_max", 0)
local limitDuration = ARGV[5] == "0" and 0 or intArg(ARGV[5], "limit_duration", 0)
local concurrency = ARGV[6] == "0" and 0 or intArg(ARGV[6], "concurrency", 0)

local prefix = queuePrefix(waitKey)
-- Re-sent with a token that still holds its job: that job again, and nothing else.
local held = heldJob(prefix, token)
if held then
  return { held, redis.call("HGETALL", prefix .. held), 0, token }
end
local picked = pickup(waitKey, activeKey, prioritizedKey, eventsKey, limiterKey, delayedKey,
  pausedKey, metaKey, pcKey, markerKey, prefix, token, lockDuration, now, limitMax,
  limitDuration, concurrency, redis.call("HGETALL", metaKey), nil, nil)
picked[4] = token
return picked
