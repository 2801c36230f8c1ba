--- Reads a parent's children by what became of them: the completed ones with their return values
--- (processed), the pending ones (unprocessed), the ones that failed under
--- ignoreDependencyOnFailure or continueParentOnFailure with their failure reasons (ignored), and
--- the ones that failed under failParentOnFailure or no policy, oldest failure first (failed).
--- Children are named by their job keys (emq:{q}:<id>), as the parent's keys hold them. It only
--- reads.
--- @key processed     `emq:{q}:<job_id>:processed`     completed children and their values
--- @key dependencies  `emq:{q}:<job_id>:dependencies`  pending children
--- @key failed        `emq:{q}:<job_id>:failed`        ignored children and their reasons
--- @key unsuccessful  `emq:{q}:<job_id>:unsuccessful`  failed children
--- @arg job_id  id  the parent's id
--- @return tuple[hash, list[string], hash, list[string]]  processed, unprocessed, ignored and
---     failed
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
-- A set has no order of its own: sorted, so that two reads of the same set agree.
local unprocessed = redis.call("SMEMBERS", dependenciesKey)
table.sort(unprocessed)
return {
  redis.call("HGETALL", processedKey),
  unprocessed,
  redis.call("HGETALL", failedKey),
  redis.call("ZRANGE", unsuccessfulKey, 0, -1),
}
