-- A lock token names one pickup: a worker draws a new token for every moveToActive, and a finish
-- with fetch_next hands its token on to the job it picks next. The token's record,
-- emq:{q}:token:<token>, says which job the token holds and what its last finish answered:
-- "<held>", or "<held>:<finished>:<answer>" once it finished the job <finished> (<held> is then
-- the job a fetch-next pickup took, or empty; <answer> is where the job went, or the delay of a
-- moveToDelayed). The pickup sets it with the lock and for as long, extendLock renews both, and
-- a finish rewrites it keeping its time to live, so a call a client re-sends after losing the
-- reply can be told from a new one. Job ids hold no ":", so the record splits at its colons.

-- Sets the token's record: it holds `held`, and, when `finished` is given, it finished that job
-- first with `answer`. It lives `ttl` ms, as long as the lock it goes with.
local function recordToken(prefix, token, held, finished, answer, ttl)
  local record = finished and (held .. ":" .. finished .. ":" .. answer) or held
  redis.call("SET", prefix .. "token:" .. token, record, "PX", ttl)
end
