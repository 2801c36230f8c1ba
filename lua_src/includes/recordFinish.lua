-- Records the answer of a finish that picked no job up in the token's record (see recordToken),
-- for the time the record has left (XX: never a record without a time to live).
local function recordFinish(prefix, token, finished, answer)
  redis.call("SET", prefix .. "token:" .. token, ":" .. finished .. ":" .. answer, "KEEPTTL", "XX")
end
