--- Tells which job holds a deduplication id: its id, or "" when none does.
--- None does once the id is released or its TTL ran out. The holder may have been removed
--- while a TTL still runs on the id.
--- @key dedup  `emq:{q}:de:<dedup_id>`  the deduplication id's holder
--- @arg dedup_id  string(non-empty)  the deduplication id
--- @return string  the holder's id, or ""
-- The queue's key prefix ("emq:{q}:") from any of its keys ("emq:{q}:wait", "emq:{q}:7:lock"),
-- or nil when the key is not one of a queue's: job keys are built from it, so they carry the
-- queue's hash tag and land on its Cluster slot. The scripts that delete by the keys a runtime
-- passes check each against it.
local function queuePrefix(key)
  return string.match(key, "^(emq:{[^{}]*}:)")
end

local dedupKey = KEYS[1]
local dedupId = ARGV[1]

-- A runtime that builds the keys itself must build them for this id.
local prefix = queuePrefix(dedupKey)
if not prefix or dedupKey ~= prefix .. "de:" .. dedupId then
  error("key " .. dedupKey .. " is not the key of deduplication id '" .. dedupId .. "'")
end
return redis.call("GET", dedupKey) or ""
