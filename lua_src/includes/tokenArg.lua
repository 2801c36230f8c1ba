-- A worker's lock token: any text but the empty one, which would name no pickup.
local function tokenArg(value)
  if value == "" then
    error("token must not be empty")
  end
  return value
end
