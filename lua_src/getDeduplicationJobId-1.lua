--- Tells which job holds a deduplication id: its id, or "" when none does.
--- None does once the id is released or its TTL ran out. The holder may have been removed
--- while a TTL still runs on the id.
--- @key dedup  `emq:{q}:de:<dedup_id>`  the deduplication id's holder
--- @arg dedup_id  string(non-empty)  the deduplication id
--- @return string  the holder's id, or ""
--- @include "includes/queuePrefix"

local dedupKey = KEYS[1]
local dedupId = ARGV[1]

-- A runtime that builds the keys itself must build them for this id.
local prefix = queuePrefix(dedupKey)
if not prefix or dedupKey ~= prefix .. "de:" .. dedupId then
  error("key " .. dedupKey .. " is not the key of deduplication id '" .. dedupId .. "'")
end
return redis.call("GET", dedupKey) or ""
