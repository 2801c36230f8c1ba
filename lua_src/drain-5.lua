--- Empties wait, paused, prioritized and optionally delayed, a bounded batch a call.
--- Each call removes up to `count` jobs, with their companion keys and deduplication ids, and answers
--- how many it removed. A job scheduler's current iteration stays. A removed job's parent stops
--- waiting for it; a parent so released goes to a key the drain empties, and goes too.
--- @key wait         `emq:{q}:wait`         the wait list
--- @key paused       `emq:{q}:paused`       the paused list
--- @key delayed      `emq:{q}:delayed`      the delayed set
--- @key prioritized  `emq:{q}:prioritized`  the prioritized set
--- @key schedulers   `emq:{q}:repeat`       the job schedulers, scored by next run
--- @arg delayed  bool = false   empty the delayed set too
--- @arg count    int(1..10000)  the most jobs the call removes
--- @return int  how many jobs the call removed: fewer than `count` when the keys are empty (but
---     for scheduler iterations)
--- @include "includes/checkQueueKeys"
--- @include "includes/eraseJob"
--- @include "includes/intArg"
--- @include "includes/leaveParent"
--- @include "includes/schedulerIteration"

local waitKey, pausedKey, delayedKey, prioritizedKey, schedulersKey = KEYS[1], KEYS[2], KEYS[3],
  KEYS[4], KEYS[5]
local withDelayed = ARGV[1] == "1"
local budget = intArg(ARGV[2], "count", 1, 10000)

local prefix = checkQueueKeys({ waitKey, pausedKey, delayedKey, prioritizedKey, schedulersKey },
  { "wait", "paused", "delayed", "prioritized", "repeat" })

-- Takes up to `budget` jobs out of one key, from its head (lowest score first), stepping over
-- scheduler iterations, which stay where they are; then their data, then their parents (a parent
-- released goes to wait, paused or prioritized: after the key's own writes). Returns how many.
local function drainKey(key, isList)
  local place, gone = 0, {}
  while budget > 0 do
    local asked = budget
    local ids = redis.call(isList and "LRANGE" or "ZRANGE", key, tostring(place),
      tostring(place + asked - 1))
    local taken = 0
    for i, id in ipairs(ids) do
      if not schedulerIteration(prefix, schedulersKey, id) then
        if isList then
          -- Marked ("" is no job's id) and taken out together: the other places hold meanwhile.
          redis.call("LSET", key, tostring(place + i - 1), "")
        else
          redis.call("ZREM", key, id)
        end
        taken = taken + 1
        gone[#gone + 1] = id
      end
    end
    if isList and taken > 0 then
      redis.call("LREM", key, tostring(taken), "")
    end
    budget = budget - taken
    if #ids < asked then
      break
    end
    place = place + #ids - taken
  end
  local parents = {}
  for i, id in ipairs(gone) do
    parents[i] = eraseJob(prefix, id) or false
  end
  for i, id in ipairs(gone) do
    leaveParent(prefix, prefix .. id, parents[i] or nil)
  end
  return #gone
end

-- Passes over the keys until one removes nothing (or the budget is spent): a parent released by
-- one pass is in a key that the pass may have emptied already.
local removed = 0
repeat
  local pass = drainKey(waitKey, true) + drainKey(pausedKey, true)
  if withDelayed then
    pass = pass + drainKey(delayedKey, false)
  end
  pass = pass + drainKey(prioritizedKey, false)
  removed = removed + pass
until pass == 0 or budget == 0
return removed
