--- Lists job schedulers by their next run, a page at a time, with their count.
--- Each is read as getJobScheduler-2 reads one.
--- @key schedulers  `emq:{q}:repeat`  the job schedulers, scored by next run
--- @arg start  int(0..)  the first place of the page, counting from 0
--- @arg count  int(1..1000)  the most schedulers on the page
--- @arg asc    bool      soonest first (else latest first)
--- @return tuple[int, list[hash]]  how many schedulers the queue has, and the page
--- @include "includes/intArg"
--- @include "includes/queuePrefix"

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
