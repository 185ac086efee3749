-- ARGV: prefix, judge, size, owner. Creates or resizes the judge's tokens, frees those of
-- dead owners; returns how many are free.
local P = prefix .. 'j:' .. ARGV[2] .. ':'
ensure(P, tonumber(ARGV[3]), ARGV[4])
reap(P)
return redis.call('LLEN', P .. 'free')
