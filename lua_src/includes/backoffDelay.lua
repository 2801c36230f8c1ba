-- The retry delay, in ms, of a job that failed its `attempt`-th attempt, by its `backoff` option:
-- - a number: that delay every time ("fixed");
-- - an object: `delay`, and `type` "fixed" (`delay` every time), "exponential" or none
--   (`delay * 2^(attempt - 1)`), or any other type: `custom`, the delay the caller computed with
--   its own strategy. With `jitter` (a share from 0 to 1), the delay is drawn from
--   [d * (1 - jitter), d]: d * (1 - jitter) + d * jitter * draw, `draw` the caller's fraction in
--   [0, 1) (math.random is not random inside Redis);
-- - anything else: 0.
local function backoffDelay(backoff, attempt, draw, custom)
  if type(backoff) == "number" then
    return math.max(math.floor(backoff), 0)
  end
  if type(backoff) ~= "table" then
    return 0
  end
  local kind = backoff.type
  local delay = tonumber(backoff.delay) or 0
  if kind == "exponential" or kind == nil then
    delay = delay * 2 ^ (attempt - 1)
  elseif kind ~= "fixed" then
    return custom
  end
  local share = tonumber(backoff.jitter) or 0
  if share > 0 then
    share = math.min(share, 1)
    delay = delay * (1 - share) + delay * share * draw
  end
  return math.max(math.floor(delay), 0)
end
