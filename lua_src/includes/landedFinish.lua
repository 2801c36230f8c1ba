--- @include "tokenRecord"

-- What the finish of `jobId` by `token` answered, when one landed: the answer to the same call
-- re-sent. The token's record says so while it lives, also after the job was removed by
-- retention or finished again by another token.
local function landedFinish(prefix, jobId, token)
  local _, finished, answer = tokenRecord(prefix, token)
  if finished == jobId then
    return answer
  end
  return nil
end
