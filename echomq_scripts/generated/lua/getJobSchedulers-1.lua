--- Lists job schedulers by their next run, a page at a time, with their count.
--- Each is read as getJobScheduler-2 reads one.
--- @key schedulers  `emq:{q}:repeat`  the job schedulers, scored by next run
--- @arg start  int(0..)  the first place of the page, counting from 0
--- @arg count  int(1..1000)  the most schedulers on the page
--- @arg asc    bool      soonest first (else latest first)
--- @return tuple[int, list[hash]]  how many schedulers the queue has, and the page
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
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait", "emq:{q}:7:lock"),
-- or nil when the key is not one of a queue's: job keys are built from it, so they carry the
-- queue's hash tag and land on its Cluster slot. The scripts that delete by the keys a runtime
-- passes check each against it.
local function queuePrefix(key)
  return string.match(key, "^(emq:{[^{}]*}:)")
end

local schedulersKey = KEYS[1]
local start = intArg(ARGV[1], "start", 0)
local count = intArg(ARGV[2], "count", 1, 1000)
local command = ARGV[3] == "1" and "ZRANGE" or "ZREVRANGE"

local prefix = queuePrefix(schedulersKey)
local page = {}
local found = redis.call(command, schedulersKey, start, start + count - 1, "WITHSCORES")
for i = 1, #found, 2 do
  local fields = redis.call("HGETALL", prefix .. "repeat:" .. found[i])
  fields[#fields + 1], fields[#fields + 2] = "id", found[i]
  fields[#fields + 1], fields[#fields + 2] = "next", string.format("%d", tonumber(found[i + 1]))
  page[#page + 1] = fields
end
return { redis.call("ZCARD", schedulersKey), page }
