--- @include "releaseDedupId"
--- @include "removeJobKeys"

-- Deletes what a job has besides its place in a state key, which the caller (a walk that takes
-- many jobs out of one key at a time) removes itself: its deduplication id released as on
-- removal, its hash and its companion keys. Returns its "parentKey", or nil: the caller tells
-- the parent once its own writes to the state key are done, since a parent it releases may go
-- to the key it walks.
local function eraseJob(prefix, jobId)
  local fields = redis.call("HMGET", prefix .. jobId, "deid", "parentKey")
  releaseDedupId(prefix, jobId, fields[1] or nil)
  removeJobKeys(prefix, jobId)
  return fields[2] or nil
end
