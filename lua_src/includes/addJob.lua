--- @include "checkJobArgs"
--- @include "createJob"
--- @include "deduplicate"
--- @include "emitEvent"
--- @include "queuePrefix"

-- Adds one job without a parent (a flow's jobs are added by addFlow): the add scripts' shared
-- part. They pass `customId` ("" for a generated id), `name`, `data` (JSON), `opts` (JSON),
-- `now` and `dedupId` as they came, and their own fields of the hash (`extraFields`). Returns the
-- job id and true when the job is new; or, adding nothing, the id of the job that holds the
-- deduplication id (deduplicate), or that has the custom id (a `duplicated` event), and false.
local function addJob(idKey, eventsKey, metaKey, customId, name, data, opts, now, dedupId,
    extraFields)
  local dedup = checkJobArgs(customId, opts, now, dedupId)
  local prefix = queuePrefix(idKey)
  local exists = customId ~= "" and redis.call("EXISTS", prefix .. customId) == 1
  local dedupKeyArgs, replaced = nil, nil
  if dedupId ~= "" then
    local holder
    holder, dedupKeyArgs, replaced = deduplicate(prefix, eventsKey, metaKey, dedupId, dedup,
      customId, exists, name, data, opts, extraFields)
    if holder then
      return holder, false
    end
  end
  if exists then
    emitEvent(eventsKey, metaKey, "duplicated", customId)
    return customId, false
  end
  local jobId = createJob(idKey, prefix, customId, name, data, opts, now, dedupId, dedupKeyArgs,
    extraFields, nil)
  if replaced then
    emitEvent(eventsKey, metaKey, "deduplicated", jobId, "deduplicationId", dedupId,
      "deduplicatedJobId", replaced)
  end
  return jobId, true
end
