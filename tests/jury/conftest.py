"""Fixtures of every jury test: the fake provider server, and the judges' limits in Redis."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from django.contrib.auth import get_user_model

from tests.support.fake_provider import fake_provider_fixture  # noqa: F401 - registers the fixture
from tests.support.services import require_service

# Tests of the limits use Redis database 13, each under a key prefix of its own: nothing is
# flushed, and tests running at the same time do not meet.
LIMITS_REDIS_URL = "redis://127.0.0.1:6379/13"


@pytest.fixture
def redis_limits(settings) -> Iterator[str]:
    """The judges' limits in Redis, under a fresh key prefix (yielded); afterwards the
    process's engine and limiter are stopped and the keys deleted."""
    require_service("Redis", "127.0.0.1", 6379)
    prefix = f"test-limits:{uuid.uuid4().hex[:10]}:"
    settings.JURY_LIMITER = "redis"
    settings.JURY_LIMITER_REDIS_URL = LIMITS_REDIS_URL
    settings.JURY_LIMITER_PREFIX = prefix
    yield prefix
    from jury import execution, limits

    execution.stop_engine()
    limits.stop_redis_limiter()
    import redis

    client = redis.Redis.from_url(LIMITS_REDIS_URL)
    keys = list(client.scan_iter(match=f"{prefix}*"))
    if keys:
        client.delete(*keys)


@pytest.fixture
def admin_client(client, db):
    """A test client logged in as a superuser (the judge admin pages)."""
    user = get_user_model().objects.create_superuser("root", "root@example.org", "pw")
    client.force_login(user)
    return client
