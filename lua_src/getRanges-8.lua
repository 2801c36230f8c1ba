--- Lists the ids of the jobs in the states asked, a range of places in each.
--- Lists in the order pickup takes their jobs (from the tail), sorted sets by score.
--- @key wait              `emq:{q}:wait`              the wait list
--- @key paused            `emq:{q}:paused`            the paused list
--- @key active            `emq:{q}:active`            the active list
--- @key delayed           `emq:{q}:delayed`           the delayed set
--- @key prioritized       `emq:{q}:prioritized`       the prioritized set
--- @key completed         `emq:{q}:completed`         the completed set
--- @key failed            `emq:{q}:failed`            the failed set
--- @key waiting_children  `emq:{q}:waiting-children`  the waiting-children set
--- @arg start  int(0..) = 0  the first place, from 0
--- @arg end    int(-1..) = -1  the last place, -1 for the last of all
--- @arg asc    bool = false  in order (the next job to run, the lowest score, first), else reversed
--- @arg... state  enum(wait|paused|active|delayed|prioritized|completed|failed|waiting-children)  the states, each once or more
--- @return list[list[string]]  one list of ids for each state asked, in the order asked
--- @include "includes/intArg"
--- @include "includes/stateRanges"

local start = intArg(ARGV[1], "start", 0)
local stop = intArg(ARGV[2], "end", -1)
return stateRanges({ KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[8] },
  start, stop, ARGV[3] == "1", { unpack(ARGV, 4) })
