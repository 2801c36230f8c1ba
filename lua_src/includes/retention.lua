-- Applies removeOnComplete / removeOnFail to a finished set: true removes the job that just
-- finished, a number N keeps the newest N, { age = seconds, count = N } drops older jobs and
-- keeps at most N. Removed jobs lose their hash and their companion keys.
local function removeJobKeys(prefix, jobId)
  local jobKey = prefix .. jobId
  redis.call("DEL", jobKey, jobKey .. ":lock", jobKey .. ":dependencies", jobKey .. ":processed")
end

local function applyRetention(finishedKey, prefix, jobId, rule, now)
  if rule == nil or rule == false then
    return
  end
  local drop = {}
  if rule == true then
    drop = { jobId }
  elseif type(rule) == "number" or type(rule) == "table" then
    -- Anything but a number counts as not given: a bad rule must not fail a finished job.
    local keep = tonumber(type(rule) == "number" and rule or rule.count)
    local age = type(rule) == "table" and tonumber(rule.age) or nil
    keep = keep and math.max(math.floor(keep), 0)
    if age then
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
  for _, id in ipairs(drop) do
    redis.call("ZREM", finishedKey, id)
    removeJobKeys(prefix, id)
  end
end
