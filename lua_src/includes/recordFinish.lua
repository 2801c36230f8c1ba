--- @include "tokenKey"

-- Records the answer of a finish that picked no job up, for the time the record has left (XX:
-- never a record without a time to live).
local function recordFinish(prefix, token, finished, answer)
  redis.call("SET", tokenKey(prefix, token), ":" .. finished .. ":" .. answer, "KEEPTTL", "XX")
end
