--- @include "checkJobId"
--- @include "emitEvent"
--- @include "nowArg"
--- @include "queuePrefix"

-- The add scripts' shared part: checking a job's arguments, and writing its hash. The add scripts
-- take `customId` ("" for a generated id), `name`, `data` (JSON), `opts` (JSON), `now` and
-- `dedupId` as they came.

-- Refuses what a job may not be added with, before anything is written: an id that would make
-- its keys another's, options that are not a JSON object, or two failure policies.
local function checkJobArgs(customId, opts, now)
  nowArg(now) -- stored, and added to sets, as the caller sent it
  if customId ~= "" then
    checkJobId(customId, "job id")
  end
  -- An object, not an array: cjson reads both as tables, so the text says which it is. The
  -- empty object, the common case, needs no decoding.
  if opts == "{}" then
    return
  end
  local ok, decoded = pcall(cjson.decode, opts)
  if not ok or type(decoded) ~= "table" or not string.match(opts, "^%s*{") then
    error("opts must be a JSON object")
  end
  -- A child has one policy for its parent: with two, which one holds would be a guess.
  local policies = 0
  for _, policy in ipairs({ "failParentOnFailure", "ignoreDependencyOnFailure",
      "removeDependencyOnFailure", "continueParentOnFailure" }) do
    if decoded[policy] == true then
      policies = policies + 1
    end
  end
  if policies > 1 then
    error("opts may set only one of failParentOnFailure, ignoreDependencyOnFailure, "
      .. "removeDependencyOnFailure and continueParentOnFailure")
  end
end

-- Writes a new job's hash, with `extraFields` (the script's own fields), and takes its
-- deduplication id. A generated id skips the numbers custom ids took, and those in `reserved`
-- (a flow's custom ids, as keys; nil for none), which are yet to be written. Returns the id.
local function createJob(idKey, prefix, customId, name, data, opts, now, dedupId, extraFields,
    reserved)
  local jobId = customId
  if jobId == "" then
    repeat
      jobId = tostring(redis.call("INCR", idKey))
    until redis.call("EXISTS", prefix .. jobId) == 0 and not (reserved and reserved[jobId])
  end
  local fields = {
    "name", name, "data", data, "opts", opts, "timestamp", now, "atm", "0", "stc", "0",
  }
  if dedupId ~= "" then
    redis.call("SET", prefix .. "de:" .. dedupId, jobId)
    fields[#fields + 1] = "deid"
    fields[#fields + 1] = dedupId
  end
  for _, value in ipairs(extraFields) do
    fields[#fields + 1] = value
  end
  redis.call("HSET", prefix .. jobId, unpack(fields))
  return jobId
end

-- Adds one job without a parent (a flow's jobs are added by addFlow). Returns the job id and true
-- when the job is new; or, adding nothing, the id of the job that holds the deduplication id, or
-- that has the custom id (a `duplicated` event), and false.
local function addJob(idKey, eventsKey, metaKey, customId, name, data, opts, now, dedupId,
    extraFields)
  checkJobArgs(customId, opts, now)
  local prefix = queuePrefix(idKey)
  if dedupId ~= "" then
    local holder = redis.call("GET", prefix .. "de:" .. dedupId)
    if holder then
      return holder, false
    end
  end
  if customId ~= "" and redis.call("EXISTS", prefix .. customId) == 1 then
    emitEvent(eventsKey, metaKey, "duplicated", customId)
    return customId, false
  end
  return createJob(idKey, prefix, customId, name, data, opts, now, dedupId, extraFields), true
end
