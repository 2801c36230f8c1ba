-- One call's share of a walk that removes a tree of jobs from the bottom up (removeJob-13 with
-- its children, removeUnprocessedChildren-10). A call reads at most `limit` + 1 jobs (the top
-- and `limit` below it) and takes at most `limit`, each only once every child of it is taken
-- or kept, so what a call leaves is still a tree: its next call starts again from the top.

-- Up to this many entries a record of children is read whole and sorted, whatever room the walk
-- has left: a small tree is walked in one order on every server. A larger record, when the
-- walk has less room than it holds, gives a sample of the room's size.
local SMALL_RECORD = 32

local RECORD_SIZE = { dependencies = "SCARD", processed = "HLEN", failed = "HLEN",
  unsuccessful = "ZCARD" }
local RECORD_DROP = { dependencies = "SREM", processed = "HDEL", failed = "HDEL",
  unsuccessful = "ZREM" }

-- The entries (children's job keys) of one of a job's records: all of them, or `n` (a sample).
local function recordEntries(recordKey, part, n)
  if n == 0 then
    return {}
  elseif part == "dependencies" then
    return n and redis.call("SRANDMEMBER", recordKey, n) or redis.call("SMEMBERS", recordKey)
  elseif part == "unsuccessful" then
    return redis.call("ZRANGE", recordKey, 0, n and n - 1 or -1)
  end
  return n and redis.call("HRANDFIELD", recordKey, n) or redis.call("HKEYS", recordKey)
end

-- The children of the job at `nodeKey` in its records `parts`, sorted, at most `room` of them;
-- `partOf` learns which record names each. A child is a job of this queue whose parentKey is the
-- node: an entry naming anything else (a child removed by its retention, an id used again) is
-- dropped from the record as the walk meets it, so that records of gone children do not hold a
-- removal back. Returns the children and whether they are all of them.
local function treeChildren(prefix, nodeKey, parts, room, partOf)
  local kids, whole = {}, true
  for _, part in ipairs(parts) do
    local recordKey = nodeKey .. ":" .. part
    local entries
    if redis.call(RECORD_SIZE[part], recordKey) <= math.max(room, SMALL_RECORD) then
      entries = recordEntries(recordKey, part)
    else
      entries = recordEntries(recordKey, part, room)
      whole = false
    end
    for _, childKey in ipairs(entries) do
      local childId = string.sub(childKey, #prefix + 1)
      -- pcall: an entry naming a key that is no hash answers an error, not a parentKey.
      if string.sub(childKey, 1, #prefix) == prefix and not string.find(childId, ":", 1, true)
          and redis.pcall("HGET", childKey, "parentKey") == nodeKey then
        kids[#kids + 1] = childKey
        partOf[childKey] = part
      else
        redis.call(RECORD_DROP[part], recordKey, childKey)
      end
    end
  end
  table.sort(kids)
  if #kids > room then
    for i = #kids, room + 1, -1 do
      kids[i] = nil
    end
    whole = false
  end
  return kids, whole
end

-- Moves the child `childKey` from the record `part` of its parent to the same record of the
-- tree's top, with its entry's value or score: a chain deeper than a call can walk is cut so.
local function moveUnderTop(topKey, parentKey, childKey, part)
  local from, to = parentKey .. ":" .. part, topKey .. ":" .. part
  if part == "dependencies" then
    redis.call("SMOVE", from, to, childKey)
  elseif part == "unsuccessful" then
    redis.call("ZADD", to, redis.call("ZSCORE", from, childKey), childKey)
    redis.call("ZREM", from, childKey)
  else
    redis.call("HSET", to, childKey, redis.call("HGET", from, childKey))
    redis.call("HDEL", from, childKey)
  end
  redis.call("HSET", childKey, "parentKey", topKey)
end

-- Walks the tree under the job `topId` depth first, children in the order of their keys, and
-- answers the jobs this call takes, each after its children (the top last, when `takeTop` and
-- the whole tree fits), and whether the walk is over (every job below the top taken or kept).
-- Each job taken below the top is already out of its parent's record: that parent goes later, or
-- in a later call, and stays where it is till then (a parent in waiting-children is not
-- released). `verdict(id)` rules on each job below the top as the walk reaches it: "take",
-- "keep" (it stays, with its children, and does not hold its parent back), or a reply code that
-- ends the call before anything is written. When nothing could be taken because a chain of
-- children runs deeper than the walk can go, the first child past the walk's reach is moved under
-- the top (the next call takes the chain above it), and the third answer is true: the call did
-- something.
local function treeBatch(prefix, topId, parts, limit, takeTop, verdict)
  local top = { id = topId }
  local frames, batch, partOf = { top }, {}, {}
  local visits, stuck, over = 0, nil, false
  while #frames > 0 do
    local frame = frames[#frames]
    if not frame.kids then
      visits = visits + 1
      local ruling = frame == top and "take" or verdict(frame.id)
      if type(ruling) == "number" then
        return ruling
      end
      frame.keep = ruling == "keep"
      frame.kids, frame.whole = {}, true
      if not frame.keep then
        frame.kids, frame.whole = treeChildren(prefix, prefix .. frame.id, parts,
          limit + 1 - visits, partOf)
      end
      frame.at, frame.done = 1, true
    end
    if frame.at <= #frame.kids and visits <= limit then
      frames[#frames + 1] = { id = string.sub(frame.kids[frame.at], #prefix + 1) }
      frame.at = frame.at + 1
    else
      frames[#frames] = nil
      local complete = frame.done and frame.whole and frame.at > #frame.kids
      if not complete and not stuck and frame ~= top then
        stuck = frame -- the first job the walk could not finish: the deepest of its first path
      end
      if complete and not frame.keep and (frame ~= top or takeTop) then
        if #batch < limit then
          batch[#batch + 1] = frame.id
        else
          complete = false
        end
      end
      if frame == top then
        over = complete
      elseif not complete then
        frames[#frames].done = false
      end
    end
  end
  for _, id in ipairs(batch) do
    if id ~= topId then
      local key = prefix .. id
      redis.call(RECORD_DROP[partOf[key]], redis.call("HGET", key, "parentKey") .. ":"
        .. partOf[key], key)
    end
  end
  if #batch > 0 or not stuck then
    return batch, over, false
  end
  local stuckKey = prefix .. stuck.id
  local childKey = stuck.kids[stuck.at]
  if not childKey then
    childKey = treeChildren(prefix, stuckKey, parts, 1, partOf)[1]
  end
  if childKey then
    moveUnderTop(prefix .. topId, stuckKey, childKey, partOf[childKey])
  end
  return batch, over, true
end
