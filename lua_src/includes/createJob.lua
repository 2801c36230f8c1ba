-- Writes a new job's hash, with `extraFields` (the script's own fields), and takes its
-- deduplication id (`dedupId`, "" for none) with `dedupKeyArgs`, what SET takes after the value
-- (a TTL, KEEPTTL, or nothing). A generated id skips the numbers custom ids took, and those in
-- `reserved` (a flow's custom ids, not written yet; nil for none). Returns the id.
local function createJob(idKey, prefix, customId, name, data, opts, now, dedupId, dedupKeyArgs,
    extraFields, reserved)
  local jobId = customId
  if jobId == "" then
    repeat
      -- "%d": tostring prints a Lua number as a float, which costs the server more.
      jobId = string.format("%d", redis.call("INCR", idKey))
    until redis.call("EXISTS", prefix .. jobId) == 0 and not (reserved and reserved[jobId])
  end
  local fields = {
    "name", name, "data", data, "opts", opts, "timestamp", now, "atm", "0", "stc", "0",
  }
  if dedupId ~= "" then
    redis.call("SET", prefix .. "de:" .. dedupId, jobId, unpack(dedupKeyArgs))
    fields[#fields + 1] = "deid"
    fields[#fields + 1] = dedupId
  end
  for _, value in ipairs(extraFields) do
    fields[#fields + 1] = value
  end
  redis.call("HSET", prefix .. jobId, unpack(fields))
  return jobId
end
