--- @include "removeJobKeys"

-- Applies removeOnComplete / removeOnFail to a finished set: true removes the job that just
-- finished, a number N >= 0 keeps the newest N (a negative N keeps all, as -1 does in BullMQ),
-- { age = seconds, count = N, limit = L } drops jobs older than `age`, oldest first, then keeps at
-- most N, removing at most L jobs in all (1000 when not given): a queue that had no rule, or a
-- far larger count, sheds its backlog L jobs a finish, and no call walks the whole set. Removed
-- jobs lose their hash and their companion keys. Returns true when the job that just finished
-- was removed.
local function applyRetention(finishedKey, prefix, jobId, rule, now)
  if rule == true then
    redis.call("ZREM", finishedKey, jobId)
    removeJobKeys(prefix, jobId)
    return true
  end
  if type(rule) ~= "number" and type(rule) ~= "table" then
    return false
  end
  -- Anything but a number counts as not given: a bad rule must not fail a finished job. So do a
  -- negative count (keep all), a negative age and a limit below 1.
  local keep = tonumber(type(rule) == "number" and rule or rule.count)
  keep = keep and keep >= 0 and math.floor(keep) or nil
  local age = type(rule) == "table" and tonumber(rule.age) or nil
  local limit = type(rule) == "table" and tonumber(rule.limit) or nil
  limit = limit and limit >= 1 and math.floor(limit) or 1000
  local removedOwn = false
  local function drop(ids)
    for _, id in ipairs(ids) do
      redis.call("ZREM", finishedKey, id)
      removeJobKeys(prefix, id)
      removedOwn = removedOwn or id == jobId
    end
    return #ids
  end
  if age and age >= 0 then
    limit = limit - drop(redis.call("ZRANGEBYSCORE", finishedKey, "-inf", now - age * 1000,
      "LIMIT", "0", limit))
  end
  if keep and limit > 0 then
    local excess = math.min(redis.call("ZCARD", finishedKey) - keep, limit)
    if excess > 0 then
      drop(redis.call("ZRANGE", finishedKey, "0", excess - 1))
    end
  end
  return removedOwn
end
