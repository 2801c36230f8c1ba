--- Pauses or resumes a queue: waiting jobs move between wait and paused, and the meta hash's
--- "paused" flag says which. Active jobs are not touched: they finish as usual. Pausing a paused
--- queue, or resuming a running one, changes nothing.
--- @key wait    `emq:{q}:wait`    the wait list
--- @key paused  `emq:{q}:paused`  the paused list
--- @key meta    `emq:{q}:meta`    the queue's meta hash
--- @key events  `emq:{q}:events`  the event stream
--- @key marker  `emq:{q}:marker`  the marker idle workers block on
--- @arg action  enum(pause|resume)  what to do
--- @return int  1 when the queue's state changed, 0 when it already was so
-- Appends an event to the queue's stream, trimmed to about the length the queue's meta hash
-- sets in "max-events" (decimal digits; unset, or anything else, reads as 10000).
local function emitEvent(eventsKey, metaKey, event, jobId, ...)
  -- Handed to XADD as the text it is: a Lua number is printed again by redis.call, which costs
  -- the server more than the whole check (make bench).
  local maxEvents = redis.call("HGET", metaKey, "max-events")
  if not maxEvents or not string.find(maxEvents, "^%d+$") then
    maxEvents = "10000"
  end
  redis.call("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", event, "jobId", jobId, ...)
end
-- An argument that must be one of the words given after `name`, as its header's enum(...) lists
-- them: enumArg(ARGV[1], "action", "pause", "resume"). Returns the value. The words are compared
-- one by one, without building a table of them: a call that passes costs a comparison or two.
local function enumArg(value, name, ...)
  local count = select("#", ...)
  for i = 1, count do
    if value == select(i, ...) then
      return value
    end
  end
  local words = "'" .. select(1, ...) .. "'"
  for i = 2, count do
    words = words .. (i == count and " or '" or ", '") .. select(i, ...) .. "'"
  end
  error(name .. " must be " .. words .. ", got '" .. tostring(value) .. "'")
end

local waitKey, pausedKey, metaKey, eventsKey, markerKey =
  KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local action = enumArg(ARGV[1], "action", "pause", "resume")

local pausing = action == "pause"
if (redis.call("HEXISTS", metaKey, "paused") == 1) == pausing then
  return 0
end
local from, to = waitKey, pausedKey
if not pausing then
  from, to = pausedKey, waitKey
end
-- Oldest first onto the head of the other list: their order is kept, and they run after the
-- jobs already there (workers take from the tail).
while redis.call("RPOPLPUSH", from, to) do
end
if pausing then
  redis.call("HSET", metaKey, "paused", "1")
  redis.call("DEL", markerKey)
else
  redis.call("HDEL", metaKey, "paused")
  -- Wake the workers: prioritized jobs, or delayed ones that fell due, may be waiting too.
  redis.call("ZADD", markerKey, "0", "next")
end
emitEvent(eventsKey, metaKey, pausing and "paused" or "resumed", "")
return 1
