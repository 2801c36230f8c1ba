--- Lists the ids of the jobs in the states asked, a range of places in each.
--- Lists in the order pickup takes their jobs (from the tail), sorted sets by score.
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
--- @return list[list[string]]  one list of ids for each state asked, in the order asked
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

local STATE_NAMES = { "wait", "paused", "active", "delayed", "prioritized", "completed", "failed",
  "waiting-children" }

-- The ids in places `start` to `stop` (-1: the last) of each state named in `states`, in order
-- (`asc`: a list from its tail, the job pickup takes next; a sorted set from its lowest score)
-- or reversed. `stateKeys` are the eight state keys in the order of STATE_NAMES. Every name is
-- checked before anything is read. Returns one list of ids per name, in the order named.
local function stateRanges(stateKeys, start, stop, asc, states)
  local index = {}
  for i, name in ipairs(STATE_NAMES) do
    index[name] = i
  end
  for _, state in ipairs(states) do
    enumArg(state, "state", unpack(STATE_NAMES))
  end
  local ranges = {}
  for _, state in ipairs(states) do
    local at = index[state]
    local key = stateKeys[at]
    local ids
    if at > 3 then
      ids = redis.call(asc and "ZRANGE" or "ZREVRANGE", key, tostring(start), tostring(stop))
    elseif asc then
      -- Pickup takes from the tail: place 0 is the last entry. Read from the list's end, reversed.
      local found = redis.call("LRANGE", key, tostring(-stop - 1), tostring(-start - 1))
      ids = {}
      for j = #found, 1, -1 do
        ids[#ids + 1] = found[j]
      end
    else
      ids = redis.call("LRANGE", key, tostring(start), tostring(stop))
    end
    ranges[#ranges + 1] = ids
  end
  return ranges
end

local start = intArg(ARGV[1], "start", 0)
local stop = intArg(ARGV[2], "end", -1)
return stateRanges({ KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8] },
  start, stop, ARGV[3] == "1", { unpack(ARGV, 4) })
