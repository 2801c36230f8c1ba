--- @include "prefix"
--- @include "numbers"
--- @include "jobId"

-- Creates a job's hash, the part every add script shares. `args` holds the add scripts' common
-- arguments: job_id ("" for a generated id), name, data (JSON), opts (JSON), now, dedup_id,
-- parent_id. Returns the job id and true when the job is new; the id of the job that already
-- holds the custom id or the deduplication id and false when nothing was added; or a failure
-- code (-5 when the parent does not exist).
local function addJob(idKey, args, extraFields)
  local prefix = queuePrefix(idKey)
  nowArg(args.now) -- stored, and added to a set (addParentJob), as the caller sent it
  -- Refused before anything is written: ids become key names.
  if args.job_id ~= "" then
    checkJobId(args.job_id, "job id")
  end
  if args.parent_id ~= "" then
    checkJobId(args.parent_id, "parent id")
  end
  -- An object, not an array: cjson reads both as tables, so the text says which it is.
  local ok, opts = pcall(cjson.decode, args.opts)
  if not ok or type(opts) ~= "table" or not string.match(args.opts, "^%s*{") then
    error("opts must be a JSON object")
  end
  if args.dedup_id ~= "" then
    local holder = redis.call("GET", prefix .. "de:" .. args.dedup_id)
    if holder then
      return holder, false
    end
  end
  local jobId = args.job_id
  if jobId == "" then
    -- A custom id may already hold the next number: skip the numbers taken.
    repeat
      jobId = tostring(redis.call("INCR", idKey))
    until redis.call("EXISTS", prefix .. jobId) == 0
  elseif redis.call("EXISTS", prefix .. jobId) == 1 then
    return jobId, false
  end
  local jobKey = prefix .. jobId
  local fields = {
    "name", args.name, "data", args.data, "opts", args.opts,
    "timestamp", args.now, "atm", "0", "stc", "0",
  }
  if args.parent_id ~= "" then
    local parentKey = prefix .. args.parent_id
    if redis.call("EXISTS", parentKey) == 0 then
      return -5, false
    end
    redis.call("SADD", parentKey .. ":dependencies", jobKey)
    fields[#fields + 1] = "parentKey"
    fields[#fields + 1] = parentKey
  end
  if args.dedup_id ~= "" then
    redis.call("SET", prefix .. "de:" .. args.dedup_id, jobId)
    fields[#fields + 1] = "deid"
    fields[#fields + 1] = args.dedup_id
  end
  for _, value in ipairs(extraFields) do
    fields[#fields + 1] = value
  end
  redis.call("HSET", jobKey, unpack(fields))
  return jobId, true
end

-- The add scripts' shared arguments, by name, from their fixed ARGV positions 1..7.
local function addArgs()
  return {
    job_id = ARGV[1], name = ARGV[2], data = ARGV[3], opts = ARGV[4],
    now = ARGV[5], dedup_id = ARGV[6], parent_id = ARGV[7],
  }
end
