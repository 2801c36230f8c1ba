-- The retry delay after `attempt` failed attempts: base * 2^(attempt - 1), plus `jitter` (a
-- fraction in [0, 1) that the caller drew: Lua's math.random is not random inside Redis) of it.
local function backoffDelay(base, attempt, jitter)
  local delay = base * 2 ^ (attempt - 1)
  return math.floor(delay + delay * jitter)
end
