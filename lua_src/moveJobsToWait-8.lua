--- Runs finished jobs again in bulk: the completed or failed jobs that finished at `timestamp`
--- or before, oldest first, at most `count` a call, each as reprocessJob sends one back (its
--- attempts made kept). Answers whether more remain, so a caller calls again until 0: one call
--- stays short however many jobs there are.
--- @key finished     `emq:{q}:<outcome>`    the completed or the failed set
--- @key wait         `emq:{q}:wait`         the wait list
--- @key paused       `emq:{q}:paused`       the paused list
--- @key prioritized  `emq:{q}:prioritized`  the prioritized set
--- @key pc           `emq:{q}:pc`           the counter that orders jobs of one priority
--- @key meta         `emq:{q}:meta`         the queue's meta hash
--- @key events       `emq:{q}:events`       the event stream
--- @key marker       `emq:{q}:marker`       the marker idle workers block on
--- @arg outcome    enum(completed|failed)  the set to take jobs from
--- @arg count      int(1..1000)            the most jobs this call moves
--- @arg timestamp  int(0..)                only jobs that finished at this time or before, ms
--- @return int  1 when more such jobs remain, 0 when none does
--- @include "includes/checkQueueKeys"
--- @include "includes/digitsArg"
--- @include "includes/enumArg"
--- @include "includes/intArg"
--- @include "includes/reprocessJob"

local finishedKey, waitKey, pausedKey, prioritizedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local pcKey, metaKey, eventsKey, markerKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local outcome = enumArg(ARGV[1], "outcome", "completed", "failed")
local count, timestamp = intArg(ARGV[2], "count", 1, 1000), ARGV[3]
digitsArg(timestamp, "timestamp", 0) -- handed to Redis as the caller sent it

local prefix = checkQueueKeys({ finishedKey }, { outcome })
-- One more than a batch: whether any is left after it.
local due = redis.call("ZRANGEBYSCORE", finishedKey, "-inf", timestamp, "LIMIT", "0",
  string.format("%d", count + 1))
local paused = redis.call("HEXISTS", metaKey, "paused") == 1
for i = 1, math.min(#due, count) do
  reprocessJob(finishedKey, waitKey, pausedKey, prioritizedKey, pcKey, markerKey, eventsKey,
    metaKey, prefix, due[i], outcome, false, paused)
end
return #due > count and 1 or 0
