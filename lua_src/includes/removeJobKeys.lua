-- Deletes a job's hash and its companion keys: its lock, its logs, and a parent's :dependencies,
-- :processed, :failed (ignored children) and :unsuccessful (failed children).
local function removeJobKeys(prefix, jobId)
  local jobKey = prefix .. jobId
  redis.call("DEL", jobKey, jobKey .. ":lock", jobKey .. ":logs", jobKey .. ":dependencies",
    jobKey .. ":processed", jobKey .. ":failed", jobKey .. ":unsuccessful")
end
