--- @include "digitsArg"

-- The caller's clock, in ms: decimal digits, as Redis reads it. Returns the number.
local function nowArg(value)
  return digitsArg(value, "now", 0)
end
