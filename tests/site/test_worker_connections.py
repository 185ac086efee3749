"""A Celery worker keeps its database connection across tasks for DATABASE_CONN_MAX_AGE, as the
web server does across requests, and closes it after every task when the age is 0 (needs
PostgreSQL: its pg_stat_activity shows the worker's connections)."""

from __future__ import annotations

import time
import uuid

import pytest
from celery import Celery
from django.db import connection

from tests.support import celery_worker
from tests.support.redis_db import flushes_redis
from tests.support.services import require_service

BROKER = "redis://127.0.0.1:6379/15"

pytestmark = flushes_redis(BROKER)


def worker_backends(application_name: str) -> list[tuple]:
    """The worker's connections to the test database (other tests may leave theirs open)."""
    with connection.cursor() as cursor:
        cursor.execute(
            """SELECT pid, backend_start FROM pg_stat_activity
               WHERE datname = current_database() AND application_name = %s""",
            [application_name],
        )
        return sorted(cursor.fetchall())


def settled_backends(application_name: str, timeout: float = 10.0) -> list[tuple]:
    """The worker's connections once they stop changing (the task's post-run hook runs after
    its result is sent)."""
    deadline = time.monotonic() + timeout
    seen = worker_backends(application_name)
    while time.monotonic() < deadline:
        time.sleep(0.5)
        now = worker_backends(application_name)
        if now == seen:
            return now
        seen = now
    return seen


@pytest.mark.postgres
@pytest.mark.redis
@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("max_age", ["60", "0"])
def test_a_worker_keeps_its_connection_for_conn_max_age(tmp_path, monkeypatch, max_age):
    if connection.vendor != "postgresql":
        pytest.skip(
            "reads the worker's connections from pg_stat_activity; CI runs it on PostgreSQL"
        )
    require_service("Redis", "127.0.0.1", 6379)
    import redis

    redis.Redis.from_url(BROKER).flushdb()
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.delenv("CELERY_RESULT_BACKEND", raising=False)
    client = Celery("test-client", broker=BROKER, backend=BROKER, set_as_current=False)

    def task() -> dict:
        return client.send_task("annotation.worker_health").get(timeout=90)

    name = f"medhelm-test-worker-{uuid.uuid4().hex[:8]}"
    with celery_worker.running_worker(
        broker_url=BROKER,
        result_backend=BROKER,
        log_path=tmp_path / "worker.log",
        extra_env={
            "DATABASE_CONN_MAX_AGE": max_age,
            # dj-database-url passes query parameters to the driver as connection options.
            "DATABASE_URL": f"{celery_worker.test_database_url()}?application_name={name}",
        },
    ):
        task()
        after_first = settled_backends(name)
        for _ in range(3):
            task()
        after_four = settled_backends(name)
    client.close()
    if max_age == "0":
        assert after_first == after_four == []  # closed after every task
    else:
        # One connection, opened by the first task and used by the three after it.
        assert len(after_first) == 1
        assert after_four == after_first
