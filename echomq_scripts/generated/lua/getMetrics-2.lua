--- Reads the metrics of completed or of failed jobs.
--- The count since the queue began, the per-minute series' bookkeeping and a page of its points,
--- newest minute first. It only reads.
--- @key metrics  `emq:{q}:metrics:<outcome>`       the outcome's metrics hash
--- @key data     `emq:{q}:metrics:<outcome>:data`  the outcome's per-minute series
--- @arg outcome  enum(completed|failed)  which jobs' metrics
--- @arg start    int                     the first point to answer (0: the newest minute; a
---     negative index counts from the oldest, as LRANGE's)
--- @arg stop     int                     the last point to answer, included (-1: the oldest)
--- @return tuple[int, int, int, list[int], int]  the count, the series' last minute (prevTS, ms;
---     0 before the first point), the count then (prevCount), the points asked for, and how many
---     points the series holds
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
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait", "emq:{q}:7:lock"),
-- or nil when the key is not one of a queue's: job keys are built from it, so they carry the
-- queue's hash tag and land on its Cluster slot. The scripts that delete by the keys a runtime
-- passes check each against it.
local function queuePrefix(key)
  return string.match(key, "^(emq:{[^{}]*}:)")
end

local metricsKey, dataKey = KEYS[1], KEYS[2]
local outcome = enumArg(ARGV[1], "outcome", "completed", "failed")
local start = intArg(ARGV[2], "start", -9007199254740991)
local stop = intArg(ARGV[3], "stop", -9007199254740991)

-- Keys built for another outcome or queue would answer another series.
local prefix = queuePrefix(metricsKey)
if not prefix or metricsKey ~= prefix .. "metrics:" .. outcome then
  error("key " .. metricsKey .. " is not the queue's metrics:" .. outcome .. " key")
end
if dataKey ~= metricsKey .. ":data" then
  error("key " .. dataKey .. " is not the key of " .. metricsKey .. "'s series")
end
local stored = redis.call("HMGET", metricsKey, "count", "prevTS", "prevCount")
local points = redis.call("LRANGE", dataKey, string.format("%d", start), string.format("%d", stop))
for i, point in ipairs(points) do
  points[i] = tonumber(point)
end
return { tonumber(stored[1]) or 0, tonumber(stored[2]) or 0, tonumber(stored[3]) or 0, points,
  redis.call("LLEN", dataKey) }
