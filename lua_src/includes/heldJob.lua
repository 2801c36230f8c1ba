--- @include "tokenRecord"

-- The job `token` holds now: the one its record names, while that job's lock holds the token.
local function heldJob(prefix, token)
  local held = tokenRecord(prefix, token)
  if held and held ~= "" and redis.call("GET", prefix .. held .. ":lock") == token then
    return held
  end
  return nil
end
