-- A lock token names one pickup: a worker draws a new token for every moveToActive, and a finish
-- with fetch_next hands its token on to the job it picks next. The token's record,
-- emq:{q}:token:<token>, says which job the token holds and what its last finish answered:
-- "<held>", or "<held>:<finished>:<answer>" once it finished the job <finished> (<held> is then
-- the job a fetch-next pickup took, or empty; <answer> is where the job went, or the delay of a
-- moveToDelayed). The pickup sets it with the lock and for as long, extendLock renews both, and
-- a finish rewrites it keeping its time to live, so a call a client re-sends after losing the
-- reply can be told from a new one. Job ids hold no ":", so the record splits at its colons.

local function recordToken(prefix, token, held, finished, answer, ttl)
  local record = finished and (held .. ":" .. finished .. ":" .. answer) or held
  redis.call("SET", prefix .. "token:" .. token, record, "PX", ttl)
end

-- Records the answer of a finish that picked no job up, for the time the record has left (XX:
-- never a record without a time to live).
local function recordFinish(prefix, token, finished, answer)
  redis.call("SET", prefix .. "token:" .. token, ":" .. finished .. ":" .. answer, "KEEPTTL", "XX")
end

-- The token's record as (the job it holds or held last, the job it finished or "", that
-- finish's answer or ""), or nil when the token has no record.
local function tokenRecord(prefix, token)
  local record = redis.call("GET", prefix .. "token:" .. token)
  if not record then
    return nil
  end
  return string.match(record, "^([^:]*):?([^:]*):?(.*)$")
end

-- The job `token` holds now: the one its record names, while that job's lock holds the token.
local function heldJob(prefix, token)
  local held = tokenRecord(prefix, token)
  if held and held ~= "" and redis.call("GET", prefix .. held .. ":lock") == token then
    return held
  end
  return nil
end

-- What the finish of `jobId` by `token` answered, when one landed: the answer to the same call
-- re-sent. The token's record says so while it lives, also after the job was removed by
-- retention or finished again by another token.
local function landedFinish(prefix, jobId, token)
  local _, finished, answer = tokenRecord(prefix, token)
  if finished == jobId then
    return answer
  end
  return nil
end
