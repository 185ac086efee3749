-- ARGV: prefix, judge, size, rpm, burst, owner, claimant, call.
-- Returns {1, 0} taken, {0, ms} wait, {-1, 0} claimed by another live worker.
local P = prefix .. 'j:' .. ARGV[2] .. ':'
local owner, claimant, call = ARGV[6], ARGV[7], ARGV[8]
ensure(P, tonumber(ARGV[3]), owner)
if not claim(call, claimant) then return {-1, 0} end
if redis.call('LLEN', P .. 'free') == 0 then reap(P) end
if not redis.call('LMOVE', P .. 'free', P .. 'inuse:' .. owner, 'LEFT', 'RIGHT') then
  return {0, -1}
end
local wait = charge(P, tonumber(ARGV[4]), tonumber(ARGV[5]))
if wait > 0 then
  redis.call('LPOP', P .. 'inuse:' .. owner)
  put_back(P, 1)
  return {0, wait}
end
return {1, 0}
