--- Removes a state's jobs older than a grace period, a bounded batch a call, answering which.
--- Each call reads at most `limit` entries of the state's key, from where the
--- cursor says, and removes those that qualify: older than `now - grace` (for completed,
--- failed and waiting-children by their score; for the others by the job's own times), not held
--- by a worker (active with a lock) and not a job scheduler's current iteration. A job goes
--- with its lock, companion keys and deduplication id, and its parent stops waiting for it.
--- @key set         `emq:{q}:<state>`  the state's key
--- @key stalled     `emq:{q}:stalled`  the stalled set
--- @key events      `emq:{q}:events`   the event stream
--- @key meta        `emq:{q}:meta`     the queue's meta hash
--- @key schedulers  `emq:{q}:repeat`   the job schedulers, scored by next run
--- @arg state   enum(completed|failed|delayed|wait|paused|prioritized|active|waiting-children)  the state to clean
--- @arg now     int(0..) = @now  the caller's clock, ms
--- @arg grace   int(0..)  how old a job must be to go, in ms before now
--- @arg limit   int(1..10000)  the most entries the call reads (so the most it removes)
--- @arg cursor  int(0..) = 0  0 to start, then what the previous call answered
--- @return tuple[int, list[string]]  the cursor for the next call (0: the walk is over), and
---     the ids removed, in the order removed
--- @include "includes/checkQueueKeys"
--- @include "includes/emitEvent"
--- @include "includes/enumArg"
--- @include "includes/eraseJob"
--- @include "includes/intArg"
--- @include "includes/leaveParent"
--- @include "includes/nowArg"
--- @include "includes/schedulerIteration"

local setKey, stalledKey, eventsKey, metaKey, schedulersKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4],
  KEYS[5]
local state = enumArg(ARGV[1], "state", "completed", "failed", "delayed", "wait", "paused",
  "prioritized", "active", "waiting-children")
local cutoff = nowArg(ARGV[2]) - intArg(ARGV[3], "grace", 0)
local limit = intArg(ARGV[4], "limit", 1, 10000)
local cursor = intArg(ARGV[5], "cursor", 0)

local prefix = checkQueueKeys({ setKey, stalledKey, eventsKey, metaKey, schedulersKey },
  { state, "stalled", "events", "meta", "repeat" })

-- The place in the key where this call starts: how many entries the walk kept before it. Past
-- the cursor 0, a cursor is that place plus one, so that 0 can mean the end.
local place = cursor > 0 and cursor - 1 or 0
local isList = state == "wait" or state == "paused" or state == "active"
-- The job's own times a state is aged by, the first one set (the finished states are aged by
-- their scores, which are their finishing times, and waiting-children by when it was entered).
local times = { "finishedOn", "processedOn", "timestamp" }
if state == "delayed" then
  times = { "processedOn", "timestamp" }
elseif state == "prioritized" then
  times = { "timestamp" }
end

local function qualifies(id)
  if schedulerIteration(prefix, schedulersKey, id) then
    return false
  end
  if state == "active" and redis.call("EXISTS", prefix .. id .. ":lock") == 1 then
    return false
  end
  local stored = redis.call("HMGET", prefix .. id, unpack(times))
  for i = 1, #times do
    if stored[i] then
      return tonumber(stored[i]) <= cutoff
    end
  end
  return true -- a job without a time (no hash) is older than any
end

local removed = {}
local read, more
if state == "completed" or state == "failed" or state == "waiting-children" then
  local ids = redis.call("ZRANGEBYSCORE", setKey, "-inf", string.format("%d", cutoff), "LIMIT",
    tostring(place), tostring(limit))
  read = #ids
  for _, id in ipairs(ids) do
    redis.call("ZREM", setKey, id)
    removed[#removed + 1] = id
  end
  -- None kept: the next old enough is at the same place now.
  more = #redis.call("ZRANGEBYSCORE", setKey, "-inf", string.format("%d", cutoff), "LIMIT",
    tostring(place), "1") > 0
elseif isList then
  -- From the tail, where the oldest are: an entry to remove is marked ("" is no job's id) and
  -- the marks are taken out together, so the places of the others hold while the call walks.
  local ids = redis.call("LRANGE", setKey, tostring(-(place + limit)), tostring(-(place + 1)))
  read = #ids
  more = place + read < redis.call("LLEN", setKey)
  for i = #ids, 1, -1 do
    if qualifies(ids[i]) then
      redis.call("LSET", setKey, tostring(-(place + #ids - i + 1)), "")
      removed[#removed + 1] = ids[i]
    end
  end
  if #removed > 0 then
    redis.call("LREM", setKey, tostring(-#removed), "")
  end
else
  local ids = redis.call("ZRANGE", setKey, tostring(place), tostring(place + limit - 1))
  read = #ids
  more = place + read < redis.call("ZCARD", setKey)
  for _, id in ipairs(ids) do
    if qualifies(id) then
      redis.call("ZREM", setKey, id)
      removed[#removed + 1] = id
    end
  end
end

local parents = {}
for i, id in ipairs(removed) do
  if state == "active" then
    redis.call("SREM", stalledKey, id)
  end
  parents[i] = eraseJob(prefix, id) or false
  emitEvent(eventsKey, metaKey, "removed", id, "prev", state)
end
-- Then the parents, so that one released to the key walked comes after the walk's own writes;
-- one removed by this call is gone and is left alone.
for i, id in ipairs(removed) do
  leaveParent(prefix, prefix .. id, parents[i] or nil)
end
emitEvent(eventsKey, metaKey, "cleaned", "", "count", tostring(#removed))

-- The walk is over when the call read to the end of the key.
return { more and place + read - #removed + 1 or 0, removed }
