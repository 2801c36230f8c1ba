--- @include "tokenKey"

-- Sets the token's record (see tokenKey): it holds `held`, and, when `finished` is given, it
-- finished that job first with `answer`. It lives `ttl` ms, as long as the lock it goes with.
local function recordToken(prefix, token, held, finished, answer, ttl)
  local record = finished and (held .. ":" .. finished .. ":" .. answer) or held
  redis.call("SET", tokenKey(prefix, token), record, "PX", ttl)
end
