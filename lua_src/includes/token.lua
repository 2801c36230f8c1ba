-- A lock token names one pickup: a worker draws a new token for every moveToActive, and a finish
-- with fetch_next hands its token on to the job it picks next. The token's record,
-- emq:{q}:token:<token>, names the job the token holds: "<job>", or "<job>:<finished>" when the
-- pickup came with the finish of <finished>. It is set with the lock, for as long, and extendLock
-- renews both, so a call that a client re-sends after losing the reply can be told from a new one.
-- Job ids hold no ":", so the record splits at its first one.

local function recordToken(prefix, token, jobId, finished, ttl)
  local record = finished and (jobId .. ":" .. finished) or jobId
  redis.call("SET", prefix .. "token:" .. token, record, "PX", ttl)
end

-- The token's record as (the job it holds or held last, the job finished before it or ""), or
-- nil when the token has no record.
local function tokenRecord(prefix, token)
  local record = redis.call("GET", prefix .. "token:" .. token)
  if not record then
    return nil
  end
  return string.match(record, "^([^:]*):?(.*)$")
end

-- The job `token` holds now: the one its record names, while that job's lock holds the token.
local function heldJob(prefix, token)
  local held = tokenRecord(prefix, token)
  if held and redis.call("GET", prefix .. held .. ":lock") == token then
    return held
  end
  return nil
end
