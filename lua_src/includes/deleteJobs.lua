--- @include "emitEvent"
--- @include "releaseDedupId"
--- @include "removeJobKeys"

-- The entries a list search reads at a time.
local LIST_READ = 1000

-- Takes the ids of `wanted` (id -> true; `count` of them) that the list at `listKey` holds out of
-- it in one pass from the tail, where the oldest are, that stops once all are found: each found
-- entry is marked ("" is no job's id) and the marks go together at the end. A search per id
-- (LREM) would read the list once per job: a batch on a long wait list would cost its length
-- times the batch. Returns the ids found, as a set.
local function takeFromList(listKey, wanted, count)
  local found, marks = {}, 0
  local length = redis.call("LLEN", listKey)
  local from = length -- the entries from the tail not read yet end before this place
  while from > 0 and marks < count do
    local first = math.max(from - LIST_READ, 0)
    local entries = redis.call("LRANGE", listKey, first, from - 1)
    for i = #entries, 1, -1 do
      local id = entries[i]
      if wanted[id] and not found[id] then
        found[id] = true
        marks = marks + 1
        -- From the tail: LSET walks to a negative place from that end.
        redis.call("LSET", listKey, first + i - 1 - length, "")
      end
    end
    from = first
  end
  if marks > 0 then
    redis.call("LREM", listKey, -marks, "")
  end
  return found
end

-- Deletes jobs (`ids`, in that order) in whatever states hold them: out of that state (`places`,
-- the states to look in, each { key, name }), and out of the stalled set; each one's
-- deduplication id released as on removal; its hash and companion keys deleted; and a `removed`
-- event with the state it was in. What their parents record of them is the caller's to mend.
local function deleteJobs(prefix, ids, places, stalledKey, eventsKey, metaKey)
  local prev, inNoSet, unplaced = {}, {}, 0
  for _, id in ipairs(ids) do
    for _, place in ipairs(places) do
      local name = place[2]
      if name ~= "wait" and name ~= "paused" and name ~= "active"
          and redis.call("ZREM", place[1], id) == 1 then
        prev[id] = name
      end
    end
    if not prev[id] then
      inNoSet[id] = true
      unplaced = unplaced + 1
    end
  end
  for _, place in ipairs(places) do
    local name = place[2]
    if unplaced > 0 and (name == "wait" or name == "paused" or name == "active") then
      for id in pairs(takeFromList(place[1], inNoSet, unplaced)) do
        prev[id] = name
        inNoSet[id] = nil
        unplaced = unplaced - 1
      end
    end
  end
  for _, id in ipairs(ids) do
    redis.call("SREM", stalledKey, id)
    releaseDedupId(prefix, id, redis.call("HGET", prefix .. id, "deid") or nil)
    removeJobKeys(prefix, id)
    emitEvent(eventsKey, metaKey, "removed", id, "prev", prev[id] or "unknown")
  end
end
