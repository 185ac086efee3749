-- ARGV: prefix, judge, owner, claimant-or-empty, call-or-empty[, endpoint pool]. Gives one
-- token back (and one of the endpoint pool's, when given) and, when given, drops the claim
-- (if it is still this claimant's).
local P = prefix .. 'j:' .. ARGV[2] .. ':'
if redis.call('LPOP', P .. 'inuse:' .. ARGV[3]) then put_back(P, 1) end
if ARGV[6] and ARGV[6] ~= '' then
  local E = prefix .. 'j:' .. ARGV[6] .. ':'
  if redis.call('LPOP', E .. 'inuse:' .. ARGV[3]) then put_back(E, 1) end
end
if ARGV[5] ~= '' and redis.call('HGET', prefix .. 'claims', ARGV[5]) == ARGV[4] then
  redis.call('HDEL', prefix .. 'claims', ARGV[5])
end
return 1
