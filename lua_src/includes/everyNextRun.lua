-- When an `every` scheduler runs next, in ms, and its offset: the place of its runs within each
-- period of `every` ms. `previous` is the run before (nil for the first): the next is `every`
-- after it, or, when that is already past at `now` (runs were missed), the first slot after
-- `now` that keeps the offset. The first run is at `startDate` when that is later than `now`,
-- else at the next slot that keeps a given offset, else at `now`. An offset of 0 is taken from
-- the run found, so that later runs keep its place.
local function everyNextRun(previous, every, now, offset, startDate)
  local nextRun
  if previous then
    nextRun = previous + every
    if nextRun < now then
      nextRun = math.floor(now / every) * every + offset
      if nextRun <= now then
        nextRun = nextRun + every
      end
    end
  elseif startDate > 0 then
    nextRun = math.max(startDate, now)
  elseif offset > 0 then
    nextRun = math.floor(now / every) * every + offset
    if nextRun <= now then
      nextRun = nextRun + every
    end
  else
    nextRun = now
  end
  if offset == 0 then
    offset = nextRun - math.floor(nextRun / every) * every
  end
  return nextRun, offset
end
