-- The hash of the parent whose ":processed" key is `processedKey`, when that key is `jobId`'s and
-- the job exists; nil otherwise.
local function ownerOfProcessed(processedKey, jobId)
  local jobKey = string.sub(processedKey, 1, #processedKey - #":processed")
  if #jobKey < #jobId or string.sub(jobKey, -#jobId) ~= jobId
      or redis.call("EXISTS", jobKey) == 0 then
    return nil
  end
  return jobKey
end
