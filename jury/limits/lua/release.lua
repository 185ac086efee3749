-- ARGV: prefix, judge, owner, claimant-or-empty, call-or-empty. Gives one token back and,
-- when given, drops the claim (if it is still this claimant's).
local P = prefix .. 'j:' .. ARGV[2] .. ':'
if redis.call('LPOP', P .. 'inuse:' .. ARGV[3]) then put_back(P, 1) end
if ARGV[5] ~= '' and redis.call('HGET', prefix .. 'claims', ARGV[5]) == ARGV[4] then
  redis.call('HDEL', prefix .. 'claims', ARGV[5])
end
return 1
