--- @include "createJob"
--- @include "emitEvent"
--- @include "enqueueNewJob"

-- What a job that finishes (completed, or failed for good) at `now` does to the deduplication id
-- it took (`dedupId`, its "deid" field, or nil), while it still holds it. An add deduplicated
-- while the job was active, with keepLastIfActive (deduplicate keeps the last one in
-- `dn:<dedupId>`), is added now, with the job's own custom id when it had one and that id is
-- free (else nothing is added: a `duplicated` event), and holds the id in its turn. Otherwise the
-- id is released, unless a TTL still runs on it: then it lapses with the TTL, as the add asked.
local function finishDedupId(prefix, jobId, dedupId, now)
  if not dedupId then
    return
  end
  local key = prefix .. "de:" .. dedupId
  if redis.call("GET", key) ~= jobId then
    return
  end
  local nextKey = prefix .. "dn:" .. dedupId
  local kept = redis.call("HMGET", nextKey, "name", "data", "opts", "jid", "delay", "priority")
  if kept[1] then
    redis.call("DEL", nextKey)
    local customId = kept[4] or ""
    if customId ~= "" and redis.call("EXISTS", prefix .. customId) == 1 then
      -- Taken meanwhile: nothing is added, as an add of that id would add nothing.
      emitEvent(prefix .. "events", prefix .. "meta", "duplicated", customId)
    else
      local delay, priority = tonumber(kept[5]) or 0, tonumber(kept[6]) or 0
      local fields = {}
      if kept[5] then -- addDelayedJob's add, a delay of 0 too: to delayed, as that add went
        fields[#fields + 1], fields[#fields + 2] = "delay", kept[5]
      end
      if priority > 0 then
        fields[#fields + 1], fields[#fields + 2] = "priority", kept[6]
      end
      local id = createJob(prefix .. "id", prefix, customId, kept[1], kept[2], kept[3], now, dedupId,
        {}, fields, nil)
      -- Past 2^53 - 1 a score is not exact: the add was checked at its own time, not this one.
      local runAt = math.min(tonumber(now) + delay, 9007199254740991)
      local keys = {}
      for _, name in ipairs({ "wait", "paused", "delayed", "prioritized", "pc", "marker", "events",
          "meta" }) do
        keys[#keys + 1] = prefix .. name
      end
      enqueueNewJob(keys, id, kept[1], delay, kept[5] and runAt or nil, priority,
        redis.call("HEXISTS", prefix .. "meta", "paused") == 1, kept[3])
      return
    end
  end
  if redis.call("PTTL", key) == -1 then
    redis.call("DEL", key)
  end
end
