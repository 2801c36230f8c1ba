--- @include "jobOptions"

-- Whether a job's options (the JSON its add stored) set lifo to JSON true: a job that goes to
-- wait goes where workers take it next. Options that never name it, the common case, are not
-- decoded.
local function lifoOption(opts)
  return opts ~= nil and string.find(opts, '"lifo"', 1, true) ~= nil
    and jobOptions(opts).lifo == true
end
