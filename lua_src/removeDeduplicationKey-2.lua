--- Releases a deduplication id by hand while the job named still holds it, TTL or not.
--- The next add with the id is then added. An add kept for when that job finished
--- (keepLastIfActive) goes with it. Another holder, or none, is left alone.
--- @key dedup       `emq:{q}:de:<dedup_id>`  the deduplication id's holder
--- @key dedup_next  `emq:{q}:dn:<dedup_id>`  the add kept for when the holder finishes
--- @arg dedup_id  string(non-empty)  the deduplication id
--- @arg job_id    id                 the job that must hold it
--- @return int  1 when the id was released, 0 when that job did not hold it
--- @include "includes/queuePrefix"

local dedupKey, dedupNextKey = KEYS[1], KEYS[2]
local dedupId, jobId = ARGV[1], ARGV[2]

-- A runtime that builds the keys itself must build them for this id, in one queue.
local prefix = queuePrefix(dedupKey)
if not prefix or dedupKey ~= prefix .. "de:" .. dedupId
    or dedupNextKey ~= prefix .. "dn:" .. dedupId then
  error("keys " .. dedupKey .. " and " .. dedupNextKey .. " are not the keys of deduplication id '"
    .. dedupId .. "'")
end
if redis.call("GET", dedupKey) ~= jobId then
  return 0
end
redis.call("DEL", dedupKey, dedupNextKey)
return 1
