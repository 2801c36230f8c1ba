--- Recovers stalled jobs: active jobs whose worker stopped renewing the lock.
--- A job is stalled when it was active at the previous run of this script (which marks every
--- active job in the stalled set), no heartbeat cleared its mark since, and its lock is gone.
--- Below the maximum stalled count it goes back to wait (paused while the queue is paused), to the
--- front of the line, with its count incremented; past it, it fails like any failed job (metrics,
--- removeOnFail, its deduplication id released). Every run is one atomic step, so several
--- workers may run it.
--- @key stalled  `emq:{q}:stalled`  the stalled set: the marks of the previous run
--- @key wait     `emq:{q}:wait`     the wait list
--- @key active   `emq:{q}:active`   the active list
--- @key failed   `emq:{q}:failed`   the failed set
--- @key paused   `emq:{q}:paused`   the paused list
--- @key meta     `emq:{q}:meta`     the queue's meta hash
--- @key events   `emq:{q}:events`   the event stream
--- @key marker   `emq:{q}:marker`   the marker idle workers block on
--- @arg max_stalled  int  how often a job may stall before it fails
--- @arg now          int  the caller's clock, in milliseconds
--- @return tuple[list[string], list[string]]  the ids moved back to wait, and the ids failed
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait"): job keys are built
-- from it, so they carry the queue's hash tag and land on its Cluster slot.
local function queuePrefix(key)
  return string.match(key, "^(.*:)[^:]*$")
end
-- A numeric argument, or a Lua error naming it: scripts read their numbers before they write
-- anything, so a caller's mistake never leaves a job half-moved.
local function numberArg(value, name)
  local number = tonumber(value)
  if not number then
    error(name .. " must be a number, got '" .. tostring(value) .. "'")
  end
  return number
end
-- A job's options, from the JSON its add stored: always a table, whatever was stored, so a
-- script can read them before it writes anything. JSON null reads as absent.
local function jobOptions(raw)
  local ok, decoded = pcall(cjson.decode, raw or "{}")
  if not ok or type(decoded) ~= "table" then
    return {}
  end
  for name, value in pairs(decoded) do
    if value == cjson.null then
      decoded[name] = nil
    end
  end
  return decoded
end
-- Applies removeOnComplete / removeOnFail to a finished set: true removes the job that just
-- finished, a number N keeps the newest N, { age = seconds, count = N } drops older jobs and
-- keeps at most N. Removed jobs lose their hash and their companion keys.
local function removeJobKeys(prefix, jobId)
  local jobKey = prefix .. jobId
  redis.call("DEL", jobKey, jobKey .. ":lock", jobKey .. ":dependencies", jobKey .. ":processed")
end

local function applyRetention(finishedKey, prefix, jobId, rule, now)
  if rule == nil or rule == false then
    return
  end
  local drop = {}
  if rule == true then
    drop = { jobId }
  elseif type(rule) == "number" or type(rule) == "table" then
    -- Anything but a number counts as not given: a bad rule must not fail a finished job.
    local keep = tonumber(type(rule) == "number" and rule or rule.count)
    local age = type(rule) == "table" and tonumber(rule.age) or nil
    keep = keep and math.max(math.floor(keep), 0)
    if age then
      local old = redis.call("ZRANGEBYSCORE", finishedKey, "-inf", now - age * 1000)
      for _, id in ipairs(old) do
        drop[#drop + 1] = id
      end
    end
    if keep then
      local excess = redis.call("ZRANGE", finishedKey, 0, -keep - 1)
      for _, id in ipairs(excess) do
        drop[#drop + 1] = id
      end
    end
  end
  for _, id in ipairs(drop) do
    redis.call("ZREM", finishedKey, id)
    removeJobKeys(prefix, id)
  end
end
-- Releases the deduplication id a finished job held (`dedupId`, its "deid" field, or nil),
-- unless another job holds it by now.
local function releaseDedupId(prefix, jobId, dedupId)
  if dedupId and redis.call("GET", prefix .. "de:" .. dedupId) == jobId then
    redis.call("DEL", prefix .. "de:" .. dedupId)
  end
end
-- Appends an event to the queue's stream, trimmed to about the length the queue's meta hash
-- sets in "max-events" (10000 when unset).
local function emitEvent(eventsKey, metaKey, event, jobId, ...)
  local maxEvents = tonumber(redis.call("HGET", metaKey, "max-events")) or 10000
  redis.call("XADD", eventsKey, "MAXLEN", "~", maxEvents, "*", "event", event, "jobId", jobId, ...)
end
-- The marker is a sorted set with one member, "next", whose score says when work is due: 0 for
-- now, a timestamp for the next delayed job. Idle workers block on it (BZPOPMIN).
local function signalWork(markerKey, dueAt)
  redis.call("ZADD", markerKey, "LT", dueAt, "next")
end

-- Sets the marker from the queue's state after jobs left or arrived.
local function refreshMarker(markerKey, waitKey, prioritizedKey, delayedKey, paused)
  if not paused and (redis.call("LLEN", waitKey) > 0 or redis.call("ZCARD", prioritizedKey) > 0) then
    redis.call("ZADD", markerKey, 0, "next")
    return
  end
  local nextDelayed = redis.call("ZRANGE", delayedKey, 0, 0, "WITHSCORES")
  if nextDelayed[2] then
    redis.call("ZADD", markerKey, nextDelayed[2], "next")
  else
    redis.call("DEL", markerKey)
  end
end

local prefix = queuePrefix(KEYS[1])
local maxStalled, now = numberArg(ARGV[1], "max_stalled"), numberArg(ARGV[2], "now")
local paused = redis.call("HEXISTS", KEYS[6], "paused") == 1
local recovered, failed = {}, {}
for _, jobId in ipairs(redis.call("SMEMBERS", KEYS[1])) do
  local jobKey = prefix .. jobId
  if redis.call("EXISTS", jobKey .. ":lock") == 0 and redis.call("LREM", KEYS[3], -1, jobId) == 1 then
    local stalledCount = redis.call("HINCRBY", jobKey, "stc", 1)
    if stalledCount > maxStalled then
      redis.call("HSET", jobKey, "failedReason", "job stalled more than allowable limit",
        "finishedOn", now)
      redis.call("ZADD", KEYS[4], now, jobId)
      redis.call("INCR", prefix .. "metrics:failed")
      releaseDedupId(prefix, jobId, redis.call("HGET", jobKey, "deid"))
      emitEvent(KEYS[7], KEYS[6], "failed", jobId, "prev", "active", "reason", "stalled")
      failed[#failed + 1] = jobId
      applyRetention(KEYS[4], prefix, jobId, jobOptions(redis.call("HGET", jobKey, "opts")).removeOnFail, now)
    else
      redis.call("RPUSH", paused and KEYS[5] or KEYS[2], jobId)
      emitEvent(KEYS[7], KEYS[6], "stalled", jobId)
      recovered[#recovered + 1] = jobId
    end
  end
end
-- Mark every job active now; a heartbeat (extendLock) or a finish clears the mark.
redis.call("DEL", KEYS[1])
local active = redis.call("LRANGE", KEYS[3], 0, -1)
if #active > 0 then
  redis.call("SADD", KEYS[1], unpack(active))
end
if #recovered > 0 and not paused then
  signalWork(KEYS[8], 0)
end
return { recovered, failed }
