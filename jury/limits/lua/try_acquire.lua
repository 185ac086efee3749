-- ARGV: prefix, judge, size, rpm, burst, owner, claimant, call[, endpoint pool, its size].
-- Returns {1, 0} taken, {0, ms} wait, {-1, 0} claimed by another live worker. With an
-- endpoint pool, a token of the judge's and one of the server's are taken together.
local P = prefix .. 'j:' .. ARGV[2] .. ':'
local owner, claimant, call = ARGV[6], ARGV[7], ARGV[8]
local E = nil
if ARGV[9] and ARGV[9] ~= '' then E = prefix .. 'j:' .. ARGV[9] .. ':' end
ensure(P, tonumber(ARGV[3]), owner)
if E then ensure(E, tonumber(ARGV[10]), owner) end
if not claim(call, claimant) then return {-1, 0} end
if redis.call('LLEN', P .. 'free') == 0 then reap(P) end
if not redis.call('LMOVE', P .. 'free', P .. 'inuse:' .. owner, 'LEFT', 'RIGHT') then
  return {0, -1}
end
if E then
  if redis.call('LLEN', E .. 'free') == 0 then reap(E) end
  if not redis.call('LMOVE', E .. 'free', E .. 'inuse:' .. owner, 'LEFT', 'RIGHT') then
    redis.call('LPOP', P .. 'inuse:' .. owner)
    put_back(P, 1)
    return {0, -1}
  end
end
local wait = charge(P, tonumber(ARGV[4]), tonumber(ARGV[5]))
if wait > 0 then
  redis.call('LPOP', P .. 'inuse:' .. owner)
  put_back(P, 1)
  if E then
    redis.call('LPOP', E .. 'inuse:' .. owner)
    put_back(E, 1)
  end
  return {0, wait}
end
return {1, 0}
