-- Releases the deduplication id a finished job held, unless another job holds it by now.
local function releaseDedupId(prefix, jobKey, jobId)
  local dedupId = redis.call("HGET", jobKey, "deid")
  if dedupId and redis.call("GET", prefix .. "de:" .. dedupId) == jobId then
    redis.call("DEL", prefix .. "de:" .. dedupId)
  end
end
