--- Adds a flow, a tree of jobs in one queue whose parents wait for their children: all or nothing.
--- Every node is checked before anything is written, so a failure code or a refused argument
--- adds none of it. A parent waits in waiting-children until its children are done.
--- The nodes come in pre-order, 8 values each: a node, then its children's subtrees. A node with
--- children goes to waiting-children, and its priority is the one it runs with once released; a
--- leaf goes to delayed with a delay (keeping its priority for when it is due), else to
--- prioritized with a priority, else to wait (paused while the queue is paused). With parent_id,
--- the root becomes a child of that existing job, as when an active job adds children.
--- A custom id that exists adds nothing (a `duplicated` event) and answers its id; the nodes below
--- it become its children, and a job without a parent joins the one the flow names for it. A
--- deduplication id still held adds nothing at that node or below it: the node answers the
--- holder's id, the nodes below it "".
--- @key wait              `emq:{q}:wait`              the wait list
--- @key paused            `emq:{q}:paused`            the paused list
--- @key delayed           `emq:{q}:delayed`           the delayed set, scored by run-at
--- @key prioritized       `emq:{q}:prioritized`       the prioritized set
--- @key pc                `emq:{q}:pc`                the counter that orders jobs of one priority
--- @key waiting_children  `emq:{q}:waiting-children`  the waiting-children set
--- @key meta              `emq:{q}:meta`              the queue's meta hash
--- @key id                `emq:{q}:id`                the counter of generated ids
--- @key events            `emq:{q}:events`            the event stream
--- @key marker            `emq:{q}:marker`            the marker idle workers block on
--- @arg now        int(0..) = @now  the caller's clock, in milliseconds
--- @arg parent_id  id? = ""  an existing job in this queue whose child the root becomes, or ""
--- @arg... node    bytes     per node: job_id ("" to generate one), name, data (JSON), opts (a
---     JSON object), dedup_id (or ""), delay (ms), priority (0 for none) and its number of children
--- @return list[Added(job_id: string, added: int)]
---     per node, in the order sent: its id, and 1 when it was added (0 when it existed or was
---     deduplicated)
--- @error -5 ParentJobNotExist
--- @error -7 ParentJobCannotBeReplaced
--- @error -8 JobBelongsToJobScheduler
--- @include "includes/checkJobArgs"
--- @include "includes/checkJobId"
--- @include "includes/createJob"
--- @include "includes/emitEvent"
--- @include "includes/enqueueNewJob"
--- @include "includes/intArg"
--- @include "includes/jobOptions"
--- @include "includes/joinParent"
--- @include "includes/releaseParent"
--- @include "includes/runAtArg"

local waitKey, pausedKey, delayedKey, prioritizedKey, pcKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4],
  KEYS[5]
local waitingChildrenKey, metaKey, idKey, eventsKey, markerKey = KEYS[6], KEYS[7], KEYS[8],
  KEYS[9], KEYS[10]
local now, rootParentId = ARGV[1], ARGV[2]
local prefix = queuePrefix(idKey)
local FIELDS = 8

-- 1. Every node's arguments, and the tree they describe.
local count = (#ARGV - 2) / FIELDS
if count < 1 or count % 1 ~= 0 then
  error("a flow is one or more nodes of 8 values each (job_id, name, data, opts, dedup_id, "
    .. "delay, priority, children), got " .. (#ARGV - 2) .. " values")
end
local nodes = {}
local byCustomId = {} -- a custom id -> its node's index
local owed = {} -- the nodes still owed children, innermost last: { index, how many }
for i = 1, count do
  local at = 2 + (i - 1) * FIELDS
  local node = {
    customId = ARGV[at + 1], name = ARGV[at + 2], data = ARGV[at + 3], opts = ARGV[at + 4],
    dedupId = ARGV[at + 5],
    delay = intArg(ARGV[at + 6], "node " .. i .. "'s delay", 0),
    priority = intArg(ARGV[at + 7], "node " .. i .. "'s priority", 0, 2097151),
    children = intArg(ARGV[at + 8], "node " .. i .. "'s children", 0),
  }
  node.dedup = checkJobArgs(node.customId, node.opts, now, node.dedupId)
  if node.dedup and (node.dedup.replace or node.dedup.keepLastIfActive) then
    error("node " .. i .. ": a flow's job takes no opts.deduplication.replace or "
      .. "keepLastIfActive: what it would replace, or keep, has a parent of its own")
  end
  if node.children > 0 and node.delay > 0 then
    error("node " .. i .. " has children and a delay: a parent runs when its children are done")
  end
  if node.delay > 0 then
    node.runAt = runAtArg(now, node.delay, "node " .. i .. "'s delay")
  end
  if node.customId ~= "" then
    if byCustomId[node.customId] then
      error("job id '" .. node.customId .. "' is in the flow twice")
    end
    byCustomId[node.customId] = i
    node.key = prefix .. node.customId
  end
  if i > 1 then
    local open = owed[#owed]
    if not open then
      error("node " .. i .. " is past the end of the tree the children counts describe")
    end
    node.parent = open[1]
    open[2] = open[2] - 1
    if open[2] == 0 then
      owed[#owed] = nil
    end
  end
  if node.children > 0 then
    owed[#owed + 1] = { i, node.children }
  end
  nodes[i] = node
end
if #owed > 0 then
  error("the children counts describe more nodes than the " .. count .. " sent")
end

-- 2. What the flow meets in Redis: the root's parent, deduplication ids still held, custom ids
-- that exist, and whose child each of those already is. A parent is one that exists: a
-- parentKey naming a job that is gone (removed by retention) counts as none.
local rootParentKey = nil
if rootParentId ~= "" then
  checkJobId(rootParentId, "parent id")
  rootParentKey = prefix .. rootParentId
  if redis.call("EXISTS", rootParentKey) == 0 then
    return -5
  end
end
local taken = {} -- the deduplication ids this flow takes
for _, node in ipairs(nodes) do
  local above = nodes[node.parent]
  if above and above.skipped then
    node.skipped = "above"
  elseif node.dedupId ~= "" and (taken[node.dedupId]
      or redis.call("EXISTS", prefix .. "de:" .. node.dedupId) == 1) then
    node.skipped = "deduplicated"
  elseif node.key and redis.call("EXISTS", node.key) == 1 then
    node.exists = true
    local stored = redis.call("HMGET", node.key, "parentKey", "returnvalue", "failedReason", "opts",
      "rjk")
    node.storedParent = stored[1] or nil
    if above or rootParentKey then
      -- The parent the flow names for it: nil when that one is a new job without a custom id.
      local named = rootParentKey
      if above then
        named = above.key
      end
      if stored[5] then
        -- A job scheduler's iteration is the scheduler's: it joins no flow.
        return -8
      elseif not node.storedParent or redis.call("EXISTS", node.storedParent) == 0 then
        -- It joins. What it finished with is read now: once the writes begin, a parent that a
        -- failed joiner fails may remove it by its retention before its own turn comes.
        node.joins = true
        if redis.call("ZSCORE", prefix .. "completed", node.customId) then
          node.finished, node.result = "completed", stored[2] or ""
        elseif redis.call("ZSCORE", prefix .. "failed", node.customId) then
          node.finished, node.result = "failed", stored[3] or ""
          node.options = jobOptions(stored[4])
        end
      elseif node.storedParent ~= named then
        return -7
      end
    end
  elseif node.dedupId ~= "" then
    -- Taken by a new job only: an add that meets an existing custom id takes nothing, as alone.
    taken[node.dedupId] = true
  end
end

-- A job's parent once the flow is in: a node (an index) or a job key, or neither.
local function parentAfter(i)
  local node = nodes[i]
  if node.exists and not node.joins then
    return nil, node.storedParent
  end
  if node.parent then
    return node.parent, nil
  end
  return nil, rootParentKey
end

-- An existing job that joins would wait for itself if it is above its new parent. Its ancestors
-- are followed as they will be once the flow is in: through the flow's nodes, and through the
-- parentKey fields of jobs outside it. A loop that does not pass through the joiner (parentKeys
-- that a removed parent left) is not one it makes: the walk stops there.
for i, node in ipairs(nodes) do
  if node.joins then
    local index, ancestor = parentAfter(i)
    local seen = {}
    while index or ancestor do
      if index then
        index, ancestor = parentAfter(index)
      elseif ancestor == node.key then
        error("job '" .. node.customId .. "' cannot be a child of its own descendant or of "
          .. "itself")
      elseif seen[ancestor] then
        break
      else
        seen[ancestor] = true
        -- A parentKey is a job key of this queue: the flow's node by the id it names.
        local at = byCustomId[string.sub(ancestor, #prefix + 1)]
        if at and not nodes[at].skipped then
          index, ancestor = parentAfter(at)
        else
          ancestor = redis.call("HGET", ancestor, "parentKey") or nil
        end
      end
    end
  end
end

-- 3. The writes.
local paused = redis.call("HEXISTS", metaKey, "paused") == 1
local placeKeys = { waitKey, pausedKey, delayedKey, prioritizedKey, pcKey, markerKey, eventsKey,
  metaKey }
local replies = {}
local joiners = {}
local parents = {}
for i, node in ipairs(nodes) do
  local above = nodes[node.parent]
  local parentKey = rootParentKey
  if above then
    parentKey = above.key -- written by now, unless skipped, and then so is this node
  end
  if node.skipped == "above" then
    replies[i] = { "", 0 }
  elseif node.skipped then
    local dedupKey = prefix .. "de:" .. node.dedupId
    local holder = redis.call("GET", dedupKey)
    -- As deduplicate's extend: only a TTL that runs starts again.
    if node.dedup and node.dedup.ttl and node.dedup.extend
        and redis.call("PTTL", dedupKey) > 0 then
      redis.call("SET", dedupKey, holder, "PX", node.dedup.ttl)
    end
    emitEvent(eventsKey, metaKey, "deduplicated", holder, "deduplicationId", node.dedupId,
      "deduplicatedJobId", node.customId)
    replies[i] = { holder, 0 }
  elseif node.exists then
    emitEvent(eventsKey, metaKey, "duplicated", node.customId)
    if node.joins then
      redis.call("HSET", node.key, "parentKey", parentKey)
      redis.call("SADD", parentKey .. ":dependencies", node.key)
      redis.call("HSET", parentKey, "deps", "1")
      joiners[#joiners + 1] = { node, parentKey }
    end
    replies[i] = { node.customId, 0 }
  else
    local fields = {}
    if node.delay > 0 then
      fields[#fields + 1], fields[#fields + 2] = "delay", node.delay
    end
    if node.priority > 0 then
      fields[#fields + 1], fields[#fields + 2] = "priority", node.priority
    end
    if parentKey then
      fields[#fields + 1], fields[#fields + 2] = "parentKey", parentKey
    end
    local ttl = node.dedup and node.dedup.ttl
    local id = createJob(idKey, prefix, node.customId, node.name, node.data, node.opts, now,
      node.dedupId, ttl and { "PX", ttl } or {}, fields, byCustomId)
    node.key = prefix .. id
    if parentKey then
      redis.call("SADD", parentKey .. ":dependencies", node.key)
      -- Marks the parent, so that finishing a job that never had a child reads no set (-4).
      redis.call("HSET", parentKey, "deps", "1")
    end
    if node.children > 0 then
      redis.call("ZADD", waitingChildrenKey, now, id)
      emitEvent(eventsKey, metaKey, "waiting-children", id)
      parents[#parents + 1] = id
    else
      enqueueNewJob(placeKeys, id, node.name, node.delay, node.runAt, node.priority, paused,
        node.opts)
    end
    replies[i] = { id, 1 }
  end
end

-- 4. Last, once every dependency is recorded: the jobs that joined and had finished count as
-- finished now, and a new parent none of whose children is pending (all finished, or all
-- deduplicated) goes on at once.
for _, joiner in ipairs(joiners) do
  local node = joiner[1]
  joinParent(waitingChildrenKey, prefix, node.customId, joiner[2], node.finished, node.result,
    node.options, now)
end
for _, parentId in ipairs(parents) do
  releaseParent(waitingChildrenKey, parentId, true)
end
return replies
