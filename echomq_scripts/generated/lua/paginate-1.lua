--- Reads one of a parent's records of its children, a scan page a call.
--- SSCAN, HSCAN or ZSCAN from a cursor: its pending children (dependencies), completed children and their
--- values (processed), ignored children and their reasons (failed), or failed children and when
--- they failed (unsuccessful). Children are named by their job keys. It only reads.
--- @key record  `emq:{q}:<job_id>:<part>`  the record
--- @arg job_id  id  the parent's id
--- @arg part    enum(dependencies|processed|failed|unsuccessful)  which record
--- @arg cursor  string(non-empty) = "0"  the scan's cursor: "0" to start, then what the last call answered
--- @arg count   int(1..10000)  the scan's COUNT: about how many entries a call reads
--- @return tuple[string, int, list[string]]  the cursor for the next call ("0": the walk is over),
---     how many entries the record holds, and the page: members (dependencies), or each
---     entry's key and value (processed and failed: the value; unsuccessful: the score)
-- A SCAN cursor: decimal digits, as Redis reads it. A cursor may pass 2^53, which a Lua number
-- does not hold exactly, so it stays the text it came as. Returns it.
local function cursorArg(value)
  if not string.find(value, "^%d+$") then
    error("cursor must be decimal digits, got '" .. value .. "'")
  end
  return value
end
-- An argument that must be one of the words given after `name`, as its header's enum(...) lists
-- them: enumArg(ARGV[1], "action", "pause", "resume"). Returns the value. The words are compared
-- one by one, without building a table of them: a call that passes costs a comparison or two.
local function enumArg(value, name, ...)
  local count = select("#", ...)
  for i = 1, count do
    if value == select(i, ...) then
      return value
    end
  end
  local words = "'" .. select(1, ...) .. "'"
  for i = 2, count do
    words = words .. (i == count and " or '" or ", '") .. select(i, ...) .. "'"
  end
  error(name .. " must be " .. words .. ", got '" .. tostring(value) .. "'")
end
-- The argument checkers, intArg and the other *Arg includes, return the value or raise a Lua
-- error that names the argument: scripts read their arguments before they write anything, so a
-- caller's mistake never leaves a job half-moved. Every bound is also in the script's header, so
-- the generated wrappers refuse the same values before sending them.

-- Integers stop at 2^53 - 1, the largest a Lua number holds exactly.
local MAX_INTEGER = 9007199254740991

-- An integer argument from `low` to `high` (nil: 2^53 - 1).
local function intArg(value, name, low, high)
  local number = tonumber(value)
  high = high or MAX_INTEGER
  if not number or number % 1 ~= 0 or number < low or number > high then
    local upTo = high == MAX_INTEGER and "2^53 - 1" or tostring(high)
    error(name .. " must be an integer from " .. low .. " to " .. upTo .. ", got '"
      .. tostring(value) .. "'")
  end
  return number
end

local recordKey = KEYS[1]
local jobId = ARGV[1]
local part = enumArg(ARGV[2], "part", "dependencies", "processed", "failed", "unsuccessful")
local cursor = cursorArg(ARGV[3])
local count = intArg(ARGV[4], "count", 1, 10000)
if string.sub(recordKey, -(#jobId + #part + 2)) ~= ":" .. jobId .. ":" .. part then
  error("key " .. recordKey .. " is not job '" .. jobId .. "''s " .. part)
end

local scan, size = "SSCAN", "SCARD"
if part == "processed" or part == "failed" then
  scan, size = "HSCAN", "HLEN"
elseif part == "unsuccessful" then
  scan, size = "ZSCAN", "ZCARD"
end
local found = redis.call(scan, recordKey, cursor, "COUNT", tostring(count))
return { found[1], redis.call(size, recordKey), found[2] }
