--- Picks the next job up and locks it: the pickup step of a worker.
--- Promotes due delayed jobs first; then, unless the queue is paused, the rate limiter is spent
--- or the concurrency cap is reached, takes the next job (wait first, else the best priority,
--- FIFO within a priority), locks it for the worker's token, and moves it to active.
--- @key wait         `emq:{q}:wait`         the wait list
--- @key active       `emq:{q}:active`       the active list
--- @key prioritized  `emq:{q}:prioritized`  the prioritized set
--- @key events       `emq:{q}:events`       the event stream
--- @key stalled      `emq:{q}:stalled`      the stalled set: a picked-up job leaves it
--- @key limiter      `emq:{q}:limiter`      the rate limiter's counter
--- @key delayed      `emq:{q}:delayed`      the delayed set, scored by run-at
--- @key paused       `emq:{q}:paused`       the paused list
--- @key meta         `emq:{q}:meta`         the queue's meta hash
--- @key pc           `emq:{q}:pc`           the counter that orders jobs of one priority
--- @key marker       `emq:{q}:marker`       the marker idle workers block on
--- @arg token          string  the worker's lock token
--- @arg lock_duration  int     how long the lock lives without a heartbeat, in milliseconds
--- @arg now            int     the caller's clock, in milliseconds
--- @arg limit_max      int     at most this many jobs per limit_duration (0: no limit)
--- @arg limit_duration int     the rate limiter's window, in milliseconds
--- @arg concurrency    int     at most this many jobs active in the queue (0: no cap)
--- @return tuple[string, hash, int]  the job's id and fields, or "" and {} and the milliseconds until the rate limiter allows a job (0: nothing to pick up now: empty, paused, or at the concurrency cap)
--- @include "includes/prefix"
--- @include "includes/numbers"
--- @include "includes/pickup"

local queue = {
  wait = KEYS[1], active = KEYS[2], prioritized = KEYS[3], events = KEYS[4],
  stalled = KEYS[5], limiter = KEYS[6], delayed = KEYS[7], paused = KEYS[8],
  meta = KEYS[9], pc = KEYS[10], marker = KEYS[11], prefix = queuePrefix(KEYS[1]),
}
local limits = {
  max = numberArg(ARGV[4], "limit_max"),
  duration = numberArg(ARGV[5], "limit_duration"),
  concurrency = numberArg(ARGV[6], "concurrency"),
}
local lockDuration, now = numberArg(ARGV[2], "lock_duration"), numberArg(ARGV[3], "now")
return pickup(queue, ARGV[1], lockDuration, now, limits)
