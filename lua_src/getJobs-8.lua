--- Reads the jobs in the states asked, a range of places in each.
--- In the order getRanges-8 gives, each job's id with its hash; an id whose hash is gone is
--- left out.
--- @key wait              `emq:{q}:wait`              the wait list
--- @key paused            `emq:{q}:paused`            the paused list
--- @key active            `emq:{q}:active`            the active list
--- @key delayed           `emq:{q}:delayed`           the delayed set
--- @key prioritized       `emq:{q}:prioritized`       the prioritized set
--- @key completed         `emq:{q}:completed`         the completed set
--- @key failed            `emq:{q}:failed`            the failed set
--- @key waiting_children  `emq:{q}:waiting-children`  the waiting-children set
--- @arg start  int(0..) = 0  the first place, from 0
--- @arg end    int(-1..) = -1  the last place, -1 for the last of all
--- @arg asc    bool = false  in order (the next job to run, the lowest score, first), else reversed
--- @arg... state  enum(wait|paused|active|delayed|prioritized|completed|failed|waiting-children)  the states, each once or more
--- @return list[list[tuple[string, hash]]]  for each state asked, in the order asked, its jobs:
---     each job's id and its hash
--- @include "includes/intArg"
--- @include "includes/queuePrefix"
--- @include "includes/stateRanges"

local start = intArg(ARGV[1], "start", 0)
local stop = intArg(ARGV[2], "end", -1)
local ranges = stateRanges({ KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7],
  KEYS[8] }, start, stop, ARGV[3] == "1", { unpack(ARGV, 4) })

local prefix = queuePrefix(KEYS[1])
local found = {}
for i, ids in ipairs(ranges) do
  local jobs = {}
  for _, id in ipairs(ids) do
    local fields = redis.call("HGETALL", prefix .. id)
    if #fields > 0 then
      jobs[#jobs + 1] = { id, fields }
    end
  end
  found[i] = jobs
end
return found
