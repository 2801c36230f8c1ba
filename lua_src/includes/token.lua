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

-- Where a finishing call that landed earlier sent the job, when this token made it: the answer
-- to the same call re-sent. The job's "fin" field ("<where it went>:<token>") says so while the
-- job exists. A job that retention removed is answered from the token's record, which still
-- names it: only this token's finish can have moved it out of active while the record lives
-- (stalled recovery needs the lock gone, and the record ends with the lock). `outcome` is the
-- re-sent call's own: a removed job went where the call sent it (a retried job is never removed).
local function landedFinish(prefix, jobId, token, outcome)
  local fin = redis.call("HGET", prefix .. jobId, "fin")
  if fin then
    local went, by = string.match(fin, "^([^:]*):(.*)$")
    if by == token then
      return went
    end
    return nil
  end
  if redis.call("EXISTS", prefix .. jobId) == 1 then
    return nil
  end
  local held, finished = tokenRecord(prefix, token)
  if held == jobId or finished == jobId then
    return outcome
  end
  return nil
end
