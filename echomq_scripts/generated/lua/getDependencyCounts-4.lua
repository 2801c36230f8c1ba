--- Counts a parent's children by what became of them: completed (processed), pending
--- (unprocessed), failed under ignoreDependencyOnFailure or continueParentOnFailure (ignored),
--- and failed under failParentOnFailure or no policy (failed). It only reads.
--- @key processed     `emq:{q}:<job_id>:processed`     completed children and their values
--- @key dependencies  `emq:{q}:<job_id>:dependencies`  pending children
--- @key failed        `emq:{q}:<job_id>:failed`        ignored children and their reasons
--- @key unsuccessful  `emq:{q}:<job_id>:unsuccessful`  failed children
--- @arg job_id  id  the parent's id
--- @return DependencyCounts(processed: int, unprocessed: int, ignored: int, failed: int)  the
---     sizes of the parent's records
--- @error -1 JobNotExist
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

local processedKey, dependenciesKey, failedKey, unsuccessfulKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local jobId = ARGV[1]
if not ownerOfProcessed(processedKey, jobId) then
  return -1
end
return {
  redis.call("HLEN", processedKey),
  redis.call("SCARD", dependenciesKey),
  redis.call("HLEN", failedKey),
  redis.call("ZCARD", unsuccessfulKey),
}
