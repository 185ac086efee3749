"""A task travels through a real broker to a real worker process and its result comes back,
on the embedded SQLite broker and on Redis."""

from __future__ import annotations

import pytest
from celery import Celery

from annotation.models import RatingStudy
from tests.support.celery_worker import running_worker
from tests.support.redis_db import flushes_redis
from tests.support.services import require_service

REDIS_URL = "redis://127.0.0.1:6379/15"

pytestmark = flushes_redis(REDIS_URL)


def _round_trip(broker_url: str, result_backend: str, log_path, monkeypatch) -> dict:
    # Celery lets CELERY_BROKER_URL in the environment override the broker given here.
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.delenv("CELERY_RESULT_BACKEND", raising=False)
    client = Celery("test-client", broker=broker_url, backend=result_backend, set_as_current=False)
    client.conf.broker_connection_retry_on_startup = True
    with running_worker(broker_url=broker_url, result_backend=result_backend, log_path=log_path):
        result = client.send_task("annotation.worker_health")
        try:
            return result.get(timeout=90)
        except Exception:
            print(log_path.read_text())
            raise


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_round_trip_on_the_embedded_sqlite_broker(tmp_path, study_with_members, monkeypatch):
    broker = f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}"
    backend = f"db+sqlite:///{tmp_path / 'results.sqlite3'}"
    answer = _round_trip(broker, backend, tmp_path / "worker.log", monkeypatch)
    # The worker read the test database: it sees the study this test created.
    assert answer["studies"] == RatingStudy.objects.count() == 1


@pytest.mark.celery_worker
@pytest.mark.redis
@pytest.mark.django_db(transaction=True)
def test_round_trip_on_redis(tmp_path, study_with_members, monkeypatch):
    require_service("Redis", "127.0.0.1", 6379)
    import redis

    redis.Redis.from_url(REDIS_URL).flushdb()
    answer = _round_trip(REDIS_URL, REDIS_URL, tmp_path / "worker.log", monkeypatch)
    assert answer["studies"] == 1
