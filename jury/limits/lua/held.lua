-- ARGV: prefix. The calls claimed by a live owner (a worker running or waiting to run them).
local held = {}
local entries = redis.call('HGETALL', prefix .. 'claims')
local living = {}
for i = 1, #entries, 2 do
  local owner = owner_of(entries[i + 1])
  if living[owner] == nil then living[owner] = alive(owner) end
  if living[owner] then held[#held + 1] = entries[i] end
end
return held
