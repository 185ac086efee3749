"""Per-judge concurrency and requests-per-minute limits that hold across every worker.

Two backends keep the shared state, chosen by `backend()`:

- "database" (the default, and what SQLite with the embedded broker uses): JudgeLimiter and
  JudgeLease rows. A lease per call in flight, capped at the judge's max_concurrency, and a
  token bucket for requests per minute. Each acquire is one short transaction that locks the
  judge's limiter row (SELECT ... FOR UPDATE on PostgreSQL; SQLite's IMMEDIATE transactions
  serialise writers the same way). Every call of every worker queues on that one row, which
  is fine for a demo and caps a large run at a few dozen calls a second.
- "redis" (when the Celery broker is Redis, or JURY_LIMITER=redis): a judge's concurrency is
  a list of interchangeable tokens in Redis, one per allowed request in flight. A worker
  takes one with LMOVE (or BLMOVE: blocked workers are served first come, first served, and
  wake the moment a token is put back) into a list of its own, and puts it back when the
  request has been answered. Requests per minute are a token bucket in a hash. A call is
  claimed (a hash: call -> claimant) so that two workers never run the same call at once.
  Every decision that reads and writes is one Lua script, atomic in Redis; time is Redis's.

Crash safety (Redis): each worker process (an "owner") keeps a key alive with a short TTL
from a heartbeat thread. Tokens in the list of an owner whose key has expired go back to
the free list, and its claims no longer count, so a killed worker's slots and calls come
back within OWNER_TTL_SECONDS, not after a lease of the call's whole timeout.

The Redis keys assume one Redis server (not Cluster): the scripts derive a judge's keys
from a prefix.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta

from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from jury.models import Judge, JudgeCall, JudgeLease, JudgeLimiter

log = logging.getLogger(__name__)

# A bucket holds at most ten seconds' worth of requests: bursts stay short, as providers'
# own per-minute limiters expect.
BURST_SECONDS = 10.0
# A lease outlives the call's own timeout by this much; after that a crashed worker's slot
# is free again (database backend).
LEASE_MARGIN_SECONDS = 30.0
# Redis backend: an owner is dead when its key was not renewed for this long. Long enough
# that a worker starved of CPU for a few seconds keeps its slots; short enough that a killed
# worker's calls are taken over soon.
OWNER_TTL_SECONDS = 10
HEARTBEAT_SECONDS = 2.0
# Claims of dead owners are swept from the claims hash this often (they never block
# anything: a claim counts only while its owner lives; this only bounds the hash's size).
CLAIM_SWEEP_SECONDS = 60.0
# How long a caller that found no free slot waits before it asks again (non-blocking path).
SLOT_POLL_SECONDS = 0.02


@dataclass(frozen=True)
class Acquired:
    ok: bool
    wait_seconds: float = 0.0  # when not ok: how long before trying again makes sense
    taken_elsewhere: bool = False  # another worker holds this very call


def backend() -> str:
    """ "redis" or "database": where the limits of this process live."""
    choice = getattr(settings, "JURY_LIMITER", "auto")
    if choice == "database":
        return "database"
    if choice == "redis" or (choice == "auto" and redis_url()):
        return "redis"
    return "database"


def redis_url() -> str:
    """The Redis the limiter uses: JURY_LIMITER_REDIS_URL, else a Redis Celery broker."""
    url = getattr(settings, "JURY_LIMITER_REDIS_URL", "") or ""
    if url:
        return url
    broker = str(getattr(settings, "CELERY_BROKER_URL", "") or "")
    return broker if broker.startswith(("redis://", "rediss://", "unix://")) else ""


def ensure_limiter(judge: Judge) -> None:
    if backend() == "redis":
        return  # created by the first script that needs the judge's keys
    JudgeLimiter.objects.get_or_create(judge=judge)


def acquire(*, judge: Judge, call: JudgeCall) -> Acquired:
    """Try to take a slot for `call`. Never blocks; the caller sleeps `wait_seconds`."""
    if backend() == "redis":
        return redis_limiter().try_acquire(judge=judge, call_id=call.pk)
    return _db_acquire(judge=judge, call=call)


def release(*, call: JudgeCall) -> None:
    """Give back the slot `acquire` took for `call` (and the call's claim)."""
    if backend() == "redis":
        redis_limiter().release(judge_id=call.judge_id, call_id=call.pk)
        return
    JudgeLease.objects.filter(call=call).delete()


def abandon(*, judge: Judge, call: JudgeCall) -> None:
    """A call that waited for a slot gives up (cancel, waited too long): drop its claim."""
    if backend() == "redis":
        limiter = redis_limiter()
        limiter.unclaim(claimant=limiter.claimant(f"t{threading.get_ident()}"), call_ids=[call.pk])


def forget_stale(*, call_ids: Iterable[int]) -> None:
    """Before calls are sent again (a resume): leases of workers that died must not block
    them. Database: the leases go. Redis: claims of dead owners already count for nothing."""
    JudgeLease.objects.filter(call_id__in=list(call_ids)).delete()


# --- database backend --------------------------------------------------------------------------


def _db_acquire(*, judge: Judge, call: JudgeCall) -> Acquired:
    now = timezone.now()
    with transaction.atomic():
        limiter = JudgeLimiter.objects.select_for_update().filter(judge=judge).first()
        if limiter is None:
            limiter, _ = JudgeLimiter.objects.get_or_create(judge=judge)
            limiter = JudgeLimiter.objects.select_for_update().get(pk=limiter.pk)
        JudgeLease.objects.filter(judge=judge, expires_at__lt=now).delete()
        if JudgeLease.objects.filter(call=call).exists():
            return Acquired(ok=False, taken_elsewhere=True)
        if JudgeLease.objects.filter(judge=judge).count() >= judge.max_concurrency:
            return Acquired(ok=False, wait_seconds=SLOT_POLL_SECONDS)
        if judge.requests_per_minute:
            rate = judge.requests_per_minute / 60.0
            capacity = max(1.0, rate * BURST_SECONDS)
            if limiter.refilled_at is None:
                tokens = capacity
            else:
                elapsed = (now - limiter.refilled_at).total_seconds()
                tokens = min(capacity, limiter.tokens + elapsed * rate)
            if tokens < 1.0:
                limiter.tokens, limiter.refilled_at = tokens, now
                limiter.save(update_fields=["tokens", "refilled_at"])
                return Acquired(ok=False, wait_seconds=(1.0 - tokens) / rate)
            limiter.tokens, limiter.refilled_at = tokens - 1.0, now
            limiter.save(update_fields=["tokens", "refilled_at"])
        expires = now + timedelta(seconds=judge.timeout_seconds + LEASE_MARGIN_SECONDS)
        try:
            with transaction.atomic():
                JudgeLease.objects.create(judge=judge, call=call, expires_at=expires)
        except IntegrityError:
            return Acquired(ok=False, taken_elsewhere=True)
    return Acquired(ok=True)


# --- Redis backend -------------------------------------------------------------------------------

# Shared Lua: every script starts with these functions. Keys of judge j live under
# P = prefix .. "j:" .. j .. ":" -- size, debt (tokens to destroy when the limit shrank while
# they were in use), free (list), owners (set), inuse:<owner> (list), bucket (hash).
# Global: prefix .. "owner:" .. owner (alive while it exists), prefix .. "claims" (hash).
_LUA_COMMON = """
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
"""

# ARGV: prefix, judge, size, rpm, burst, owner, claimant, call.
# Returns {1, 0} taken, {0, ms} wait, {-1, 0} claimed by another live worker.
_LUA_TRY_ACQUIRE = (
    _LUA_COMMON
    + """
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
"""
)

# ARGV: prefix, judge, owner, claimant-or-empty, call-or-empty. Gives one token back and,
# when given, drops the claim (if it is still this claimant's).
_LUA_RELEASE = (
    _LUA_COMMON
    + """
local P = prefix .. 'j:' .. ARGV[2] .. ':'
if redis.call('LPOP', P .. 'inuse:' .. ARGV[3]) then put_back(P, 1) end
if ARGV[5] ~= '' and redis.call('HGET', prefix .. 'claims', ARGV[5]) == ARGV[4] then
  redis.call('HDEL', prefix .. 'claims', ARGV[5])
end
return 1
"""
)

# ARGV: prefix, judge, size, owner. Creates or resizes the judge's tokens, frees those of
# dead owners.
_LUA_SETUP = (
    _LUA_COMMON
    + """
local P = prefix .. 'j:' .. ARGV[2] .. ':'
ensure(P, tonumber(ARGV[3]), ARGV[4])
reap(P)
return redis.call('LLEN', P .. 'free')
"""
)

# ARGV: prefix, judge, rpm, burst. 0 when a request may go now, else ms to wait.
_LUA_CHARGE = (
    _LUA_COMMON
    + """
local P = prefix .. 'j:' .. ARGV[2] .. ':'
return charge(P, tonumber(ARGV[3]), tonumber(ARGV[4]))
"""
)

# ARGV: prefix, claimant, call ids... Returns the ids that are now this claimant's.
_LUA_CLAIM = (
    _LUA_COMMON
    + """
local got = {}
for i = 3, #ARGV do
  if claim(ARGV[i], ARGV[2]) then got[#got + 1] = ARGV[i] end
end
return got
"""
)

# ARGV: prefix, claimant, call ids... Drops the claims that are still this claimant's.
_LUA_UNCLAIM = (
    _LUA_COMMON
    + """
for i = 3, #ARGV do
  if redis.call('HGET', prefix .. 'claims', ARGV[i]) == ARGV[2] then
    redis.call('HDEL', prefix .. 'claims', ARGV[i])
  end
end
return 1
"""
)

# ARGV: prefix, owner, ttl seconds, sweep (0/1), judges... Renews the owner's key, frees the
# tokens of dead owners for the given judges and, when asked, sweeps dead owners' claims.
_LUA_HEARTBEAT = (
    _LUA_COMMON
    + """
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
"""
)

SCRIPTS = {
    "try_acquire": _LUA_TRY_ACQUIRE,
    "release": _LUA_RELEASE,
    "setup": _LUA_SETUP,
    "charge": _LUA_CHARGE,
    "claim": _LUA_CLAIM,
    "unclaim": _LUA_UNCLAIM,
    "heartbeat": _LUA_HEARTBEAT,
}


def _key_prefix() -> str:
    return str(getattr(settings, "JURY_LIMITER_PREFIX", "") or "medhelm:jury:limits:")


class RedisLimiter:
    """The Redis backend of one process: its owner id, heartbeat thread and scripts.

    Synchronous (redis-py) for the per-call path; the asyncio engine of jury.execution uses
    the same keys and scripts through `redis.asyncio` (see `free_key`, `inuse_key`).
    """

    def __init__(self, url: str, prefix: str) -> None:
        import redis

        self.url = url
        self.prefix = prefix
        self.pid = os.getpid()
        self.owner = f"{socket.gethostname()}:{self.pid}:{uuid.uuid4().hex[:12]}"
        self.client = redis.Redis.from_url(url)
        self.scripts = {name: self.client.register_script(text) for name, text in SCRIPTS.items()}
        self.judges: set[int] = set()
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self._last_sweep = 0.0
        self.heartbeat()  # alive before the first token is taken
        self._thread = threading.Thread(
            target=self._beat, name="jury-limiter-heartbeat", daemon=True
        )
        self._thread.start()

    # keys the asyncio engine uses directly
    def judge_prefix(self, judge_id: int) -> str:
        return f"{self.prefix}j:{judge_id}:"

    def free_key(self, judge_id: int) -> str:
        return self.judge_prefix(judge_id) + "free"

    def inuse_key(self, judge_id: int) -> str:
        return self.judge_prefix(judge_id) + "inuse:" + self.owner

    def claimant(self, tag: str) -> str:
        """A claimant id of this owner: '<owner>#<tag>' (one per thread or per chunk run)."""
        return f"{self.owner}#{tag}"

    def remember(self, judge_id: int) -> None:
        with self._lock:
            self.judges.add(judge_id)

    # heartbeat
    def heartbeat(self) -> None:
        with self._lock:
            judges = sorted(self.judges)
        sweep = time.monotonic() - self._last_sweep > CLAIM_SWEEP_SECONDS
        if sweep:
            self._last_sweep = time.monotonic()
        self.scripts["heartbeat"](
            args=[self.prefix, self.owner, OWNER_TTL_SECONDS, "1" if sweep else "0", *judges]
        )

    def _beat(self) -> None:
        while not self._stopped.wait(HEARTBEAT_SECONDS):
            try:
                self.heartbeat()
            except Exception:  # Redis away for a moment: try again at the next beat
                log.warning("jury limiter heartbeat failed", exc_info=True)

    def stop(self) -> None:
        """Stop the heartbeat and drop the owner key (tests; a worker just exits)."""
        self._stopped.set()
        self._thread.join(timeout=5)
        self.client.delete(f"{self.prefix}owner:{self.owner}")

    # the per-call (synchronous) path
    def try_acquire(self, *, judge: Judge, call_id: int) -> Acquired:
        self.remember(judge.pk)
        taken, wait_ms = self.scripts["try_acquire"](
            args=[
                self.prefix,
                judge.pk,
                judge.max_concurrency,
                judge.requests_per_minute or 0,
                BURST_SECONDS,
                self.owner,
                self.claimant(f"t{threading.get_ident()}"),
                call_id,
            ]
        )
        if taken == 1:
            return Acquired(ok=True)
        if taken == -1:
            return Acquired(ok=False, taken_elsewhere=True)
        return Acquired(ok=False, wait_seconds=SLOT_POLL_SECONDS if wait_ms < 0 else wait_ms / 1000)

    def release(self, *, judge_id: int, call_id: int) -> None:
        self.scripts["release"](
            args=[
                self.prefix,
                judge_id,
                self.owner,
                self.claimant(f"t{threading.get_ident()}"),
                call_id,
            ]
        )

    # batch claims (chunk runs)
    def claim(self, *, claimant: str, call_ids: Iterable[int]) -> set[int]:
        ids = [str(i) for i in call_ids]
        if not ids:
            return set()
        got = self.scripts["claim"](args=[self.prefix, claimant, *ids])
        return {int(x) for x in got}

    def unclaim(self, *, claimant: str, call_ids: Iterable[int]) -> None:
        ids = [str(i) for i in call_ids]
        if ids:
            self.scripts["unclaim"](args=[self.prefix, claimant, *ids])

    def setup(self, *, judge_id: int, size: int) -> int:
        """Create or resize a judge's tokens; returns how many are free."""
        self.remember(judge_id)
        return int(self.scripts["setup"](args=[self.prefix, judge_id, size, self.owner]))


_limiter: RedisLimiter | None = None
_limiter_lock = threading.Lock()


def redis_limiter() -> RedisLimiter:
    """This process's RedisLimiter (a forked child makes its own: the owner is a process)."""
    global _limiter
    with _limiter_lock:
        wanted = (redis_url(), _key_prefix())
        current = _limiter
        if current is None or current.pid != os.getpid() or (current.url, current.prefix) != wanted:
            if current is not None and current.pid == os.getpid():
                current.stop()  # settings changed: this owner's heartbeat ends
            _limiter = RedisLimiter(*wanted)
        return _limiter


def stop_redis_limiter() -> None:
    """Stop this process's RedisLimiter, if any (tests: the next one is a new owner)."""
    global _limiter
    with _limiter_lock:
        limiter, _limiter = _limiter, None
    if limiter is not None and limiter.pid == os.getpid():
        limiter.stop()


def lua(name: str) -> str:
    """A script's source, for the asyncio engine (which registers it on its own client)."""
    return SCRIPTS[name]
