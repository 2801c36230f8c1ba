--- @include "removeJobKeys"

-- Applies removeOnComplete / removeOnFail to a finished set: true removes the job that just
-- finished, a number N >= 0 keeps the newest N (a negative N keeps all, as -1 does in BullMQ),
-- { age = seconds, count = N } drops jobs older than `age` and keeps at most N. Removed jobs lose
-- their hash and their companion keys. Returns true when the job that just finished was removed.
local function applyRetention(finishedKey, prefix, jobId, rule, now)
  if rule == nil or rule == false then
    return false
  end
  local drop = {}
  if rule == true then
    drop = { jobId }
  elseif type(rule) == "number" or type(rule) == "table" then
    -- Anything but a number counts as not given: a bad rule must not fail a finished job. So
    -- do a negative count (keep all) and a negative age.
    local keep = tonumber(type(rule) == "number" and rule or rule.count)
    local age = type(rule) == "table" and tonumber(rule.age) or nil
    keep = keep and keep >= 0 and math.floor(keep) or nil
    if age and age >= 0 then
      local old = redis.call("ZRANGEBYSCORE", finishedKey, "-inf", now - age * 1000)
      for _, id in ipairs(old) do
        drop[#drop + 1] = id
      end
    end
    if keep then
      local excess = redis.call("ZRANGE", finishedKey, 0, -keep - 1)
      for _, id in ipairs(excess) do
        drop[#drop + 1] = id
      end
    end
  end
  local removedOwn = false
  for _, id in ipairs(drop) do
    redis.call("ZREM", finishedKey, id)
    removeJobKeys(prefix, id)
    removedOwn = removedOwn or id == jobId
  end
  return removedOwn
end
