-- A fraction argument: a number from 0 up to, not including, 1.
local function fractionArg(value, name)
  local number = tonumber(value)
  if not number or not (number >= 0 and number < 1) then
    error(name .. " must be a number from 0 up to 1 (not 1 itself), got '" .. tostring(value) .. "'")
  end
  return number
end
