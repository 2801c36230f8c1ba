-- A lock token names one pickup: a worker draws a new token for every moveToActive, and a finish
-- with fetch_next hands its token on to the job it picks next. The token's record, the key this
-- returns (emq:{q}:token:<token>), says which job the token holds and what its last finish
-- answered: "<held>", or "<held>:<finished>:<answer>" once it finished the job <finished> (<held>
-- is then the job a fetch-next pickup took, or empty; <answer> is where the job went, or the delay
-- of a moveToDelayed). The pickup sets it with the lock and for as long (recordToken), extendLock
-- renews both, and a finish rewrites it keeping its time to live (recordFinish), so a call a
-- client re-sends after losing the reply can be told from a new one (tokenRecord). Job ids hold
-- no ":", so the record splits at its colons.
local function tokenKey(prefix, token)
  return prefix .. "token:" .. token
end
