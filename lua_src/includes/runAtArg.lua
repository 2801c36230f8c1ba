--- @include "nowArg"

-- When a job delayed `delay` ms (a checked integer, named `name` in the error) from `now` (the
-- caller's clock, as sent) becomes due. Refused past 2^53 - 1: beyond it a Lua number, and a
-- sorted set's score, no longer holds every integer, so the job would be due at another time
-- than the one asked for. The sum of two numbers up to 2^53 - 1 that is over it rounds to a
-- number over it too, so the comparison is exact.
local function runAtArg(now, delay, name)
  local runAt = nowArg(now) + delay
  if runAt > 9007199254740991 then
    error(name .. " must end by 2^53 - 1 ms, got now " .. now .. " + " .. name .. " "
      .. string.format("%d", delay))
  end
  return runAt
end
