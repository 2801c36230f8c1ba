--- @include "queuePrefix"

-- The queue's prefix of `finishedKey`, which must be the queue's completed or failed key as
-- `outcome` names it: the scripts that take jobs out of a finished set by the key a runtime
-- passes refuse any other with a Lua error, before any write.
local function finishedKeyPrefix(finishedKey, outcome)
  local prefix = queuePrefix(finishedKey)
  if not prefix or finishedKey ~= prefix .. outcome then
    error("key " .. finishedKey .. " is not the queue's " .. outcome .. " key")
  end
  return prefix
end
