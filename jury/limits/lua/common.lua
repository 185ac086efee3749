-- Shared by every script (prepended to each). Keys of a token pool live under
-- P = prefix .. 'j:' .. pool .. ':', the pool being a judge's id or 'e' .. an EndpointLimit's
-- id (a server's slots, shared by the judges on it) -- size, debt (tokens to destroy when the limit shrank while
-- they were in use), free (list), owners (set), inuse:<owner> (list), bucket (hash).
-- Global: prefix .. 'owner:' .. owner (alive while it exists), prefix .. 'claims' (hash).
local prefix = ARGV[1]
local function now_ms()
  local t = redis.call('TIME')
  return tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
end
local function alive(owner)
  return redis.call('EXISTS', prefix .. 'owner:' .. owner) == 1
end
local function owner_of(claimant)
  return string.match(claimant, '^(.*)#') or claimant
end
local function put_back(P, n)
  local debt = tonumber(redis.call('GET', P .. 'debt') or '0')
  local drop = math.min(debt, n)
  if drop > 0 then redis.call('DECRBY', P .. 'debt', drop) end
  for _ = 1, n - drop do redis.call('RPUSH', P .. 'free', '1') end
end
local function reap(P)
  for _, owner in ipairs(redis.call('SMEMBERS', P .. 'owners')) do
    if not alive(owner) then
      local list = P .. 'inuse:' .. owner
      local n = redis.call('LLEN', list)
      redis.call('DEL', list)
      redis.call('SREM', P .. 'owners', owner)
      if n > 0 then put_back(P, n) end
    end
  end
end
local function ensure(P, size, owner)
  redis.call('SADD', P .. 'owners', owner)
  local current = tonumber(redis.call('GET', P .. 'size') or '-1')
  if current == size then return end
  if current < 0 then
    local used = 0
    for _, o in ipairs(redis.call('SMEMBERS', P .. 'owners')) do
      used = used + redis.call('LLEN', P .. 'inuse:' .. o)
    end
    redis.call('DEL', P .. 'free', P .. 'debt')
    for _ = 1, size - used do redis.call('RPUSH', P .. 'free', '1') end
    if used > size then redis.call('SET', P .. 'debt', used - size) end
  elseif size > current then
    local debt = tonumber(redis.call('GET', P .. 'debt') or '0')
    local cancel = math.min(debt, size - current)
    if cancel > 0 then redis.call('DECRBY', P .. 'debt', cancel) end
    for _ = 1, size - current - cancel do redis.call('RPUSH', P .. 'free', '1') end
  else
    local removed = 0
    for _ = 1, current - size do
      if redis.call('LPOP', P .. 'free') then removed = removed + 1 end
    end
    if current - size > removed then redis.call('INCRBY', P .. 'debt', current - size - removed) end
  end
  redis.call('SET', P .. 'size', size)
end
-- Requests per minute: 0 when a request may go now (and it is counted), else ms to wait.
local function charge(P, rpm, burst)
  if rpm <= 0 then return 0 end
  local now = now_ms()
  local rate = rpm / 60000.0
  local capacity = math.max(1.0, rpm / 60.0 * burst)
  local b = redis.call('HMGET', P .. 'bucket', 'tokens', 'at')
  local tokens = capacity
  if b[1] then tokens = math.min(capacity, tonumber(b[1]) + (now - tonumber(b[2])) * rate) end
  if tokens < 1.0 then
    redis.call('HSET', P .. 'bucket', 'tokens', tostring(tokens), 'at', now)
    return math.max(1, math.ceil((1.0 - tokens) / rate))
  end
  redis.call('HSET', P .. 'bucket', 'tokens', tostring(tokens - 1.0), 'at', now)
  return 0
end
-- Whether `claimant` may run `call`: nobody else claimed it, or the claimer's owner died.
local function claim(call, claimant)
  local holder = redis.call('HGET', prefix .. 'claims', call)
  if holder and holder ~= claimant and alive(owner_of(holder)) then return false end
  redis.call('HSET', prefix .. 'claims', call, claimant)
  return true
end
