--- Tells whether one of the queue's lists (wait, paused or active) holds a job. It only reads.
--- @key list  `emq:{q}:<state>`  the list
--- @arg state   enum(wait|paused|active)  the list's state
--- @arg job_id  id                        the job's id
--- @return int  1 when the list holds the job, 0 when it does not
-- An argument that must be one of the words given after `name`, as its header's enum(...) lists
-- them: enumArg(ARGV[1], "action", "pause", "resume"). Returns the value. The words are compared
-- one by one, without building a table of them: a call that passes costs a comparison or two.
local function enumArg(value, name, ...)
  local count = select("#", ...)
  for i = 1, count do
    if value == select(i, ...) then
      return value
    end
  end
  local words = "'" .. select(1, ...) .. "'"
  for i = 2, count do
    words = words .. (i == count and " or '" or ", '") .. select(i, ...) .. "'"
  end
  error(name .. " must be " .. words .. ", got '" .. tostring(value) .. "'")
end
-- True when the list at `key` holds `value` (LPOS answers nil, seen in Lua as false, if not).
local function listContains(key, value)
  return redis.call("LPOS", key, value) ~= false
end

local listKey = KEYS[1]
enumArg(ARGV[1], "state", "wait", "paused", "active")
local jobId = ARGV[2]

return listContains(listKey, jobId) and 1 or 0
