-- True when the list at `key` holds `value` (LPOS answers nil, seen in Lua as false, if not).
local function listContains(key, value)
  return redis.call("LPOS", key, value) ~= false
end
