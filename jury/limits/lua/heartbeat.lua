-- ARGV: prefix, owner, ttl seconds, sweep (0/1), judges... Renews the owner's key, frees the
-- tokens of dead owners for the given judges and, when asked, sweeps dead owners' claims.
redis.call('SET', prefix .. 'owner:' .. ARGV[2], '1', 'EX', tonumber(ARGV[3]))
for i = 5, #ARGV do reap(prefix .. 'j:' .. ARGV[i] .. ':') end
if ARGV[4] == '1' then
  local entries = redis.call('HGETALL', prefix .. 'claims')
  local dead = {}
  for i = 1, #entries, 2 do
    local owner = owner_of(entries[i + 1])
    if dead[owner] == nil then dead[owner] = not alive(owner) end
    if dead[owner] then redis.call('HDEL', prefix .. 'claims', entries[i]) end
  end
end
return 1
