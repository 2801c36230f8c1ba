--- Makes jobs ready in bulk: finished jobs to run again, or delayed jobs promoted.
--- With `completed` or `failed`, the jobs of that set that finished at `timestamp` or before,
--- oldest first, each as reprocessJob sends one back (its attempts made kept); with `delayed`,
--- the delayed jobs due at `timestamp` or before, earliest first, each as promote promotes one
--- (BullMQ's promoteJobs). At most `count` a call. Answers whether more remain, so a caller calls
--- again until 0: one call stays short however many jobs there are.
--- @key source       `emq:{q}:<state>`      the set the jobs come from: completed, failed or delayed
--- @key wait         `emq:{q}:wait`         the wait list
--- @key paused       `emq:{q}:paused`       the paused list
--- @key prioritized  `emq:{q}:prioritized`  the prioritized set
--- @key pc           `emq:{q}:pc`           the counter that orders jobs of one priority
--- @key meta         `emq:{q}:meta`         the queue's meta hash
--- @key events       `emq:{q}:events`       the event stream
--- @key marker       `emq:{q}:marker`       the marker idle workers block on
--- @arg state      enum(completed|failed|delayed)  the set to take jobs from
--- @arg count      int(1..1000)                    the most jobs this call moves
--- @arg timestamp  int(0..)                        only jobs that finished (completed, failed)
---     or are due (delayed) at this time or before, ms
--- @return int  1 when more such jobs remain, 0 when none does
--- @include "includes/checkQueueKeys"
--- @include "includes/digitsArg"
--- @include "includes/enumArg"
--- @include "includes/intArg"
--- @include "includes/promoteJob"
--- @include "includes/reprocessJob"

local sourceKey, waitKey, pausedKey, prioritizedKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local pcKey, metaKey, eventsKey, markerKey = KEYS[5], KEYS[6], KEYS[7], KEYS[8]
local state = enumArg(ARGV[1], "state", "completed", "failed", "delayed")
local count, timestamp = intArg(ARGV[2], "count", 1, 1000), ARGV[3]
digitsArg(timestamp, "timestamp", 0) -- handed to Redis as the caller sent it

local prefix = checkQueueKeys({ sourceKey }, { state })
-- One more than a batch: whether any is left after it. Each set is scored by the time that
-- counts: a finished job's finish, a delayed job's run-at.
local due = redis.call("ZRANGEBYSCORE", sourceKey, "-inf", timestamp, "LIMIT", "0",
  string.format("%d", count + 1))
local paused = redis.call("HEXISTS", metaKey, "paused") == 1
for i = 1, math.min(#due, count) do
  if state == "delayed" then
    promoteJob(sourceKey, waitKey, pausedKey, prioritizedKey, pcKey, markerKey, eventsKey,
      metaKey, prefix, due[i], paused)
  else
    reprocessJob(sourceKey, waitKey, pausedKey, prioritizedKey, pcKey, markerKey, eventsKey,
      metaKey, prefix, due[i], state, false, paused)
  end
end
return #due > count and 1 or 0
