-- Releases the deduplication id a finished job held (`dedupId`, its "deid" field, or nil),
-- unless another job holds it by now.
local function releaseDedupId(prefix, jobId, dedupId)
  if dedupId and redis.call("GET", prefix .. "de:" .. dedupId) == jobId then
    redis.call("DEL", prefix .. "de:" .. dedupId)
  end
end
