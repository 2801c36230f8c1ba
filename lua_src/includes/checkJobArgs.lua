--- @include "checkJobId"
--- @include "intArg"
--- @include "nowArg"

-- Refuses what a job may not be added with, before anything is written: an id that would make
-- its keys another's, options that are not a JSON object, two failure policies, or
-- deduplication options that do not fit. `customId` ("" for a generated id), `opts` (JSON),
-- `now` and `dedupId` ("" for none) as the add took them. Returns the deduplication options
-- (opts.deduplication, read: `ttl` in ms or nil, and `extend`, `replace`, `keepLastIfActive`,
-- each set by JSON true), or nil when the job has none.
local function checkJobArgs(customId, opts, now, dedupId)
  nowArg(now) -- stored, and added to sets, as the caller sent it
  if customId ~= "" then
    checkJobId(customId, "job id")
  end
  -- An object, not an array: cjson reads both as tables, so the text says which it is. The
  -- empty object, the common case, needs no decoding.
  if opts == "{}" then
    return nil
  end
  local ok, decoded = pcall(cjson.decode, opts)
  if not ok or type(decoded) ~= "table" or not string.match(opts, "^%s*{") then
    error("opts must be a JSON object")
  end
  -- A child has one policy for its parent: with two, which one holds would be a guess.
  local policies = 0
  for _, policy in ipairs({ "failParentOnFailure", "ignoreDependencyOnFailure",
      "removeDependencyOnFailure", "continueParentOnFailure" }) do
    if decoded[policy] == true then
      policies = policies + 1
    end
  end
  if policies > 1 then
    error("opts may set only one of failParentOnFailure, ignoreDependencyOnFailure, "
      .. "removeDependencyOnFailure and continueParentOnFailure")
  end
  local dedup = decoded.deduplication
  if dedup == nil or dedup == cjson.null then
    return nil
  end
  -- The id is the dedup_id argument alone; options without it would be ignored unseen.
  if type(dedup) ~= "table" then
    error("opts.deduplication must be an object")
  end
  if dedupId == "" then
    error("opts.deduplication needs a dedup_id")
  end
  if dedup.id ~= nil and dedup.id ~= dedupId then
    error("opts.deduplication.id must be the dedup_id, '" .. dedupId .. "', or absent")
  end
  local ttl = dedup.ttl
  if ttl == cjson.null or ttl == 0 then
    ttl = nil
  elseif type(ttl) == "number" then
    ttl = intArg(ttl, "opts.deduplication.ttl", 1)
  elseif ttl ~= nil then
    error("opts.deduplication.ttl must be a number of milliseconds, got " .. cjson.encode(ttl))
  end
  return {
    ttl = ttl, extend = dedup.extend == true, replace = dedup.replace == true,
    keepLastIfActive = dedup.keepLastIfActive == true,
  }
end
