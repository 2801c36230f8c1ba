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
--- @include "includes/enumArg"
--- @include "includes/intArg"
--- @include "includes/queuePrefix"

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
