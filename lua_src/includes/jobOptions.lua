-- A job's options, from the JSON its add stored: always a table, whatever was stored, so a
-- script can read them before it writes anything. JSON null reads as absent.
local function jobOptions(raw)
  if raw == "{}" or raw == nil then
    return {} -- the common case, without decoding
  end
  local ok, decoded = pcall(cjson.decode, raw)
  if not ok or type(decoded) ~= "table" then
    return {}
  end
  for name, value in pairs(decoded) do
    if value == cjson.null then
      decoded[name] = nil
    end
  end
  return decoded
end
