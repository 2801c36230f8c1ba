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
--- @include "includes/cursorArg"
--- @include "includes/enumArg"
--- @include "includes/intArg"

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
