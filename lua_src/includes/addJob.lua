--- @include "checkJobId"
--- @include "emitEvent"
--- @include "joinParent"
--- @include "nowArg"
--- @include "queuePrefix"

-- Creates a job's hash, the part every add script shares. The add scripts share ARGV 1 to 7 and
-- pass them here as they came: `customId` ("" for a generated id), `name`, `data` (JSON), `opts`
-- (JSON), `now`, `dedupId`, `parentId`; `extraFields` are the script's own fields of the hash.
-- Returns the job id and true when the job is new; the id of the job that already holds the
-- custom id (a `duplicated` event; with a parent, see joinParent) or the deduplication id and
-- false when nothing was added; or a failure code and false: -5 when the parent does not exist
-- (before any write), -7 when the custom id's job has another parent.
local function addJob(idKey, eventsKey, metaKey, customId, name, data, opts, now, dedupId,
    parentId, extraFields)
  local prefix = queuePrefix(idKey)
  nowArg(now) -- stored, and added to a set (addParentJob), as the caller sent it
  -- Refused before anything is written: ids become key names.
  if customId ~= "" then
    checkJobId(customId, "job id")
  end
  if parentId ~= "" then
    checkJobId(parentId, "parent id")
  end
  -- An object, not an array: cjson reads both as tables, so the text says which it is. The
  -- empty object, the common case, needs no decoding.
  if opts ~= "{}" then
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
  local parentKey = nil
  if parentId ~= "" then
    parentKey = prefix .. parentId
    if redis.call("EXISTS", parentKey) == 0 then
      return -5, false
    end
  end
  if dedupId ~= "" then
    local holder = redis.call("GET", prefix .. "de:" .. dedupId)
    if holder then
      return holder, false
    end
  end
  local jobId = customId
  if jobId == "" then
    -- A custom id may already hold the next number: skip the numbers taken.
    repeat
      jobId = tostring(redis.call("INCR", idKey))
    until redis.call("EXISTS", prefix .. jobId) == 0
  elseif redis.call("EXISTS", prefix .. jobId) == 1 then
    if parentKey then
      local code = joinParent(prefix .. "waiting-children", prefix, jobId, parentKey, now)
      if code then
        return code, false
      end
    end
    emitEvent(eventsKey, metaKey, "duplicated", jobId)
    return jobId, false
  end
  local jobKey = prefix .. jobId
  local fields = {
    "name", name, "data", data, "opts", opts, "timestamp", now, "atm", "0", "stc", "0",
  }
  if parentKey then
    redis.call("SADD", parentKey .. ":dependencies", jobKey)
    -- Marks the parent, so that finishing a job that never had a child reads no set (-4).
    redis.call("HSET", parentKey, "deps", "1")
    fields[#fields + 1] = "parentKey"
    fields[#fields + 1] = parentKey
  end
  if dedupId ~= "" then
    redis.call("SET", prefix .. "de:" .. dedupId, jobId)
    fields[#fields + 1] = "deid"
    fields[#fields + 1] = dedupId
  end
  for _, value in ipairs(extraFields) do
    fields[#fields + 1] = value
  end
  redis.call("HSET", jobKey, unpack(fields))
  return jobId, true
end
