"""The breakers in Redis (the Redis limiter: the chunk engine and the per-call path): one
key per endpoint under the limiter's prefix, holding the state as JSON, replaced only if it
is still the text that was read (a compare-and-set script)."""

from __future__ import annotations

import hashlib
from typing import Any

from jury.breakers.rules import BreakerState

# An endpoint nobody has called for a day needs no state.
KEY_TTL_SECONDS = 86_400
COMPARE_AND_SET = """
local current = redis.call('GET', KEYS[1]) or ''
if current ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'EX', tonumber(ARGV[3]))
return 1
"""


def breaker_key(prefix: str, endpoint: str) -> str:
    return f"{prefix}breaker:{hashlib.sha256(endpoint.encode()).hexdigest()[:24]}"


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else (raw or "")


class RedisStore:
    """On a synchronous redis-py client."""

    def __init__(self, client: Any, prefix: str) -> None:
        self.client = client
        self.prefix = prefix
        self.cas = client.register_script(COMPARE_AND_SET)

    def load(self, endpoint: str) -> tuple[str, BreakerState]:
        raw = _text(self.client.get(breaker_key(self.prefix, endpoint)))
        return raw, BreakerState.from_json(raw)

    def save(self, endpoint: str, token: str, state: BreakerState) -> bool:
        key = breaker_key(self.prefix, endpoint)
        return bool(self.cas(keys=[key], args=[token, state.to_json(), KEY_TTL_SECONDS]))

    def load_many(self, endpoints: list[str]) -> dict[str, BreakerState]:
        if not endpoints:
            return {}
        raws = self.client.mget([breaker_key(self.prefix, e) for e in endpoints])
        return {
            e: BreakerState.from_json(_text(raw)) for e, raw in zip(endpoints, raws, strict=True)
        }


class AsyncRedisStore:
    """On the chunk engine's redis.asyncio client."""

    def __init__(self, client: Any, prefix: str) -> None:
        self.client = client
        self.prefix = prefix
        self.cas = client.register_script(COMPARE_AND_SET)

    async def load(self, endpoint: str) -> tuple[str, BreakerState]:
        raw = _text(await self.client.get(breaker_key(self.prefix, endpoint)))
        return raw, BreakerState.from_json(raw)

    async def save(self, endpoint: str, token: str, state: BreakerState) -> bool:
        key = breaker_key(self.prefix, endpoint)
        return bool(await self.cas(keys=[key], args=[token, state.to_json(), KEY_TTL_SECONDS]))
