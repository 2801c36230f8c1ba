-- Deletes a job's hash and its companion keys: its lock, a parent's :dependencies and :processed.
local function removeJobKeys(prefix, jobId)
  local jobKey = prefix .. jobId
  redis.call("DEL", jobKey, jobKey .. ":lock", jobKey .. ":dependencies", jobKey .. ":processed")
end
