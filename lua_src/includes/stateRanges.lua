--- @include "enumArg"

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
