--- Reads a parent's children by what became of them, each record whole or its first scan page.
--- The completed ones with their return values (processed), the pending ones (unprocessed), the
--- ones that failed under ignoreDependencyOnFailure or continueParentOnFailure with their failure
--- reasons (ignored), and the ones that failed under failParentOnFailure or no policy, oldest
--- failure first (failed). A record of at most `count` entries comes whole, with cursor "0"; a
--- larger one comes as paginate-1's first page of it and the cursor paginate-1 goes on from (a
--- first page that holds the whole record comes as the whole record). Children are named by their
--- job keys (emq:{q}:<id>), as the parent's keys hold them. It only reads.
--- @key processed     `emq:{q}:<job_id>:processed`     completed children and their values
--- @key dependencies  `emq:{q}:<job_id>:dependencies`  pending children
--- @key failed        `emq:{q}:<job_id>:failed`        ignored children and their reasons
--- @key unsuccessful  `emq:{q}:<job_id>:unsuccessful`  failed children
--- @arg job_id  id             the parent's id
--- @arg count   int(1..10000)  the most entries a record answered whole holds; the scan's COUNT
--- @return tuple[hash, list[string], hash, list[string], list[string]]  processed, unprocessed
---     (sorted when whole), ignored, failed (keys only: oldest failure first when whole), and
---     the four records' cursors in that order ("0": the record came whole)
--- @error -1 JobNotExist
-- The argument checkers, intArg and the other *Arg includes, return the value or raise a Lua
-- error that names the argument: scripts read their arguments before they write anything, so a
-- caller's mistake never leaves a job half-moved. Every bound is also in the script's header, so
-- the generated wrappers refuse the same values before sending them.

-- Integers stop at 2^53 - 1, the largest a Lua number holds exactly.
local MAX_INTEGER = 9007199254740991

-- An integer argument from `low` to `high` (nil: 2^53 - 1).
local function intArg(value, name, low, high)
  local number = tonumber(value)
  high = high or MAX_INTEGER
  if not number or number % 1 ~= 0 or number < low or number > high then
    local upTo = high == MAX_INTEGER and "2^53 - 1" or tostring(high)
    error(name .. " must be an integer from " .. low .. " to " .. upTo .. ", got '"
      .. tostring(value) .. "'")
  end
  return number
end
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
local count = intArg(ARGV[2], "count", 1, 10000)
if not ownerOfProcessed(processedKey, jobId) then
  return -1
end

-- One of the records: the first page of its scan, read as paginate-1 reads it, and the cursor
-- after it when it holds more than `count` entries; else the whole record, read by `whole` and
-- its arguments, and "0". A scan that went through the record in one page (as it always does a
-- compact encoding) also gives the whole record: read again, at most what the scan just read, so
-- that a whole record has one shape and order however it came.
local function firstPage(key, size, scan, whole, ...)
  if redis.call(size, key) > count then
    local found = redis.call(scan, key, "0", "COUNT", tostring(count))
    if found[1] ~= "0" then
      return found[2], found[1]
    end
  end
  return redis.call(whole, key, ...), "0"
end

local processed, processedCursor = firstPage(processedKey, "HLEN", "HSCAN", "HGETALL")
local unprocessed, unprocessedCursor = firstPage(dependenciesKey, "SCARD", "SSCAN", "SMEMBERS")
if unprocessedCursor == "0" then
  -- A set has no order of its own: sorted, so that two reads of the same set agree.
  table.sort(unprocessed)
end
local ignored, ignoredCursor = firstPage(failedKey, "HLEN", "HSCAN", "HGETALL")
local failed, failedCursor = firstPage(unsuccessfulKey, "ZCARD", "ZSCAN", "ZRANGE", 0, -1)
if failedCursor ~= "0" then
  -- ZSCAN answers each member with its score; the part holds keys only, as ZRANGE answers it.
  local keys = {}
  for i = 1, #failed, 2 do
    keys[#keys + 1] = failed[i]
  end
  failed = keys
end
return {
  processed,
  unprocessed,
  ignored,
  failed,
  { processedCursor, unprocessedCursor, ignoredCursor, failedCursor },
}
