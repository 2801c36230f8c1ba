--- @include "emitEvent"
--- @include "removeJobKeys"

-- The deduplication step of an add with the deduplication id `dedupId` and its options `dedup`
-- (checkJobArgs's reading of opts.deduplication, or nil): `customId` ("" for a generated id),
-- whether a job has it (`exists`), and the job's `name`, `data`, `opts` and the add script's
-- own fields (`extraFields`), kept when the add is deferred.
-- Returns the holder's id when the add is deduplicated: it adds nothing, and a `deduplicated`
-- event names the holder and the id that was not added. Before that, with `extend`, a TTL that
-- runs on the key starts again; with `keepLastIfActive` and the holder active, the add is kept
-- (the last one wins) in `dn:<dedupId>`, to be added when the holder finishes (finishDedupId),
-- and the id is held until then.
-- Otherwise returns nil, then what SET takes after the new job's id for the key (a TTL, none with
-- keepLastIfActive: held until the job finishes; KEEPTTL when a replaced holder's TTL runs on),
-- then the holder replaced: with `replace`, a holder still delayed (and no flow's child) is
-- removed (`removed`) and the add goes on in its place, unless the custom id exists.
local function deduplicate(prefix, eventsKey, metaKey, dedupId, dedup, customId, exists, name,
    data, opts, extraFields)
  local key = prefix .. "de:" .. dedupId
  local holder = redis.call("GET", key)
  local ttl = dedup and dedup.ttl
  local keepLast = dedup and dedup.keepLastIfActive
  local replaced = nil
  if holder then
    -- The job the key names still holds the id only while its own "deid" says so: a TTL
    -- outlives its job, whose id another job may take. Only a holder that holds is replaced, or
    -- kept for (read only then: a plain deduplicated add reads nothing more).
    local holds, hasParent = false, false
    if dedup and (dedup.replace or keepLast) then
      local stored = redis.call("HMGET", prefix .. holder, "deid", "parentKey")
      holds, hasParent = stored[1] == dedupId, stored[2] ~= false
    end
    local delayedKey = prefix .. "delayed"
    if holds and dedup.replace and not exists and not hasParent
        and redis.call("ZSCORE", delayedKey, holder) then
      redis.call("ZREM", delayedKey, holder)
      -- An add kept while it ran, before this retry, goes with it: this one is the last now.
      redis.call("DEL", prefix .. "dn:" .. dedupId)
      removeJobKeys(prefix, holder)
      emitEvent(eventsKey, metaKey, "removed", holder, "prev", "delayed")
      replaced = holder
    else
      if holds and keepLast and redis.call("LPOS", prefix .. "active", holder) then
        local nextKey = prefix .. "dn:" .. dedupId
        redis.call("DEL", nextKey)
        redis.call("HSET", nextKey, "name", name, "data", data, "opts", opts, "jid", customId,
          unpack(extraFields))
        redis.call("PERSIST", key)
      elseif ttl and dedup.extend and redis.call("PTTL", key) > 0 then
        -- Only a TTL that runs starts again: a key held without one (keepLastIfActive's, while
        -- its holder runs) stays held until its job finishes.
        redis.call("SET", key, holder, "PX", ttl)
      end
      emitEvent(eventsKey, metaKey, "deduplicated", holder, "deduplicationId", dedupId,
        "deduplicatedJobId", customId)
      return holder
    end
  end
  -- The add goes on; its key is held until the job finishes with keepLastIfActive, keeps what
  -- is left of a replaced holder's TTL unless extend, else gets the TTL asked for, or none.
  if keepLast then
    return nil, {}, replaced
  end
  if ttl and replaced and not dedup.extend then
    return nil, { "KEEPTTL" }, replaced
  end
  return nil, ttl and { "PX", ttl } or {}, replaced
end
