--- @include "checkJobId"
--- @include "queuePrefix"

-- Refuses a key that is not job `jobId`'s own (`part` ""), or its companion key named `part`
-- (":lock", ":logs"), in some queue; and an id that breaks the id rule. The scripts that write
-- by a job's key a runtime passes check it so: a runtime that builds the key itself must build
-- it for this id. Returns the queue's prefix.
local function checkJobKey(key, jobId, part)
  checkJobId(jobId, "job id")
  local prefix = queuePrefix(key)
  if not prefix or key ~= prefix .. jobId .. part then
    error("key " .. key .. " is not the " .. (part == "" and "key" or part .. " key") .. " of job '"
      .. jobId .. "'")
  end
  return prefix
end
