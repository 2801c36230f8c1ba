--- Extends the locks of many jobs in one call: a worker's heartbeat for all the jobs it runs.
--- Each is extended as extendLock-2 extends one: while its token holds it, with its stalled mark
--- cleared and its token's record renewed. A job whose lock is gone or held by another token is
--- left as it is and answered with its code; the others are extended all the same.
--- @key stalled  `emq:{q}:stalled`  the queue's stalled set
--- @arg duration  int(1..)  the locks' new time to live, in milliseconds
--- @arg... jobs   string    per job: its id, then the token that holds its lock
--- @return list[tuple[string, int]]  the jobs not extended, in the order sent: each id with -2
---     (its lock is gone) or -6 (another token holds it)
--- @error -2 JobLockNotExist
--- @error -6 JobLockMismatch
--- @include "includes/checkJobId"
--- @include "includes/checkQueueKeys"
--- @include "includes/digitsArg"
--- @include "includes/renewLock"
--- @include "includes/tokenArg"

local stalledKey = KEYS[1]
local duration = ARGV[1] -- as the caller sent it: Redis reads it
digitsArg(duration, "duration", 1)

local prefix = checkQueueKeys({ stalledKey }, { "stalled" })
if #ARGV % 2 ~= 1 then
  error("jobs are pairs of a job id and a token, got " .. (#ARGV - 1) .. " values")
end
-- Every pair is checked before the first lock is extended: the locks' keys are built from the ids.
for i = 2, #ARGV, 2 do
  checkJobId(ARGV[i], "job id")
  tokenArg(ARGV[i + 1])
end

local refused = {}
for i = 2, #ARGV, 2 do
  local jobId = ARGV[i]
  local lockState = renewLock(prefix, prefix .. jobId .. ":lock", stalledKey, ARGV[i + 1],
    duration, jobId)
  if lockState ~= 0 then
    refused[#refused + 1] = { jobId, lockState }
  end
end
return refused
