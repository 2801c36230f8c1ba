--- @include "tokenKey"

-- The token's record (see tokenKey) as (the job it holds or held last, the job it finished or "",
-- that finish's answer or ""), or nil when the token has no record.
local function tokenRecord(prefix, token)
  local record = redis.call("GET", tokenKey(prefix, token))
  if not record then
    return nil
  end
  return string.match(record, "^([^:]*):?([^:]*):?(.*)$")
end
