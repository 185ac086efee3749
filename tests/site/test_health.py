"""/healthz and /readyz: unauthenticated, JSON naming each check, 200 or 503, no secrets.

Run on the embedded defaults (SQLite database, SQLite broker) and on PostgreSQL + Redis
(DATABASE_URL and CELERY_BROKER_URL): the worker check is answered by a real Celery worker
process on the test session's own broker.
"""

from __future__ import annotations

import pytest
from celery import Celery
from django.conf import settings
from django.db import OperationalError, connection

from medhelm_site import health
from tests.support.celery_worker import running_worker
from tests.support.threads import run_at_once

CLOSED_PORT_BROKER = "redis://:broker-password-not-to-show@127.0.0.1:1/0"


@pytest.fixture(autouse=True)
def fresh_readiness():
    """Each test starts without a remembered /readyz answer (it is per process)."""
    health.forget_readiness()
    yield
    health.forget_readiness()


@pytest.fixture
def counted_checks(monkeypatch):
    """The real checks, each counting how often it ran."""
    runs = dict.fromkeys(health.CHECKS, 0)

    def counting(name, check):
        def run():
            runs[name] += 1
            return check()

        return run

    monkeypatch.setattr(
        health, "CHECKS", {name: counting(name, check) for name, check in health.CHECKS.items()}
    )
    return runs


def test_healthz_answers_without_a_login_or_the_database(client):
    # no django_db mark: a database query here would raise (pytest-django blocks it)
    response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]


@pytest.mark.django_db
def test_readyz_without_a_worker_is_503_and_names_each_check(client):
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable"
    assert set(body["checks"]) == {"database", "broker", "workers"}
    assert body["checks"]["database"]["ok"] is True
    assert body["checks"]["broker"]["ok"] is True
    workers = body["checks"]["workers"]
    assert (workers["ok"], workers["seen"], workers["error"]) == (
        False,
        0,
        "no Celery worker answered",
    )
    # a broadcast ping where the broker has one (Redis), else a task round trip
    redis = settings.CELERY_BROKER_URL.startswith("redis")
    assert workers["via"] == ("ping" if redis else "task")
    # the ping waited its timeout, not longer
    assert workers["duration_ms"] < settings.MEDHELM_READYZ_PING_TIMEOUT * 1000 * 5


@pytest.mark.django_db
def test_readyz_with_an_unreachable_broker_is_503_without_the_broker_url(client, monkeypatch):
    # Celery lets CELERY_BROKER_URL in the environment override the broker given here
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.delenv("CELERY_RESULT_BACKEND", raising=False)
    unreachable = Celery("unreachable", broker=CLOSED_PORT_BROKER, set_as_current=False)
    unreachable.conf.broker_connection_timeout = 0.5
    monkeypatch.setattr(health, "celery_app", lambda: unreachable)
    response = client.get("/readyz")
    assert response.status_code == 503
    checks = response.json()["checks"]
    assert checks["database"]["ok"] is True
    assert checks["broker"]["ok"] is False and checks["broker"]["error"]
    assert checks["workers"]["ok"] is False
    text = response.content.decode()
    assert "broker-password-not-to-show" not in text and "127.0.0.1:1" not in text


@pytest.mark.django_db
def test_readyz_with_the_database_down_is_503_naming_the_error_class(client, monkeypatch):
    def refuse(*args, **kwargs):
        raise OperationalError("connection to server at 10.0.0.9, password=secret failed")

    monkeypatch.setattr(connection, "cursor", refuse)
    response = client.get("/readyz")
    assert response.status_code == 503
    database = response.json()["checks"]["database"]
    assert database["ok"] is False and database["error"] == "OperationalError"
    assert "secret" not in response.content.decode()


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_readyz_with_a_real_worker_is_200(client, tmp_path, settings):
    settings.MEDHELM_READYZ_PING_TIMEOUT = 2.0
    settings.MEDHELM_READYZ_CACHE_SECONDS = 0  # every request checks again
    log = tmp_path / "worker.log"
    with running_worker(
        broker_url=settings.CELERY_BROKER_URL,
        result_backend=settings.CELERY_RESULT_BACKEND,
        log_path=log,
        hostname="readyz-probe@%h",
    ):
        body: dict = {}
        for _ in range(60):  # the worker takes a few seconds to start consuming
            response = client.get("/readyz")
            body = response.json()
            if response.status_code == 200:
                break
        else:
            pytest.fail(f"readyz never became ready: {body}\n{log.read_text()}")
    assert body["status"] == "ok"
    assert all(check["ok"] for check in body["checks"].values())
    assert body["checks"]["workers"]["seen"] == 1
    # and once the worker is stopped, readiness says so again
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json()["checks"]["workers"]["seen"] == 0


def test_probes_over_plain_http_are_not_redirected_to_https(client, settings):
    settings.SECURE_SSL_REDIRECT = True
    assert client.get("/healthz").status_code == 200
    # a page is redirected, the probes are exempt
    assert client.get("/accounts/login/").status_code == 301


@pytest.mark.django_db
def test_readyz_answers_a_flood_of_probes_with_one_round_of_checks(
    client, counted_checks, settings, monkeypatch
):
    # unauthenticated: each round sends a message through the broker (a task on the
    # embedded one) and waits up to the ping timeout for a worker
    settings.MEDHELM_READYZ_CACHE_SECONDS = 3.0
    now = [1000.0]
    monkeypatch.setattr(health, "clock", lambda: now[0])
    first = client.get("/readyz")
    assert first.status_code == 503 and first.json()["age_s"] == 0.0
    for _ in range(20):
        now[0] += 0.1
        again = client.get("/readyz")
        assert again.status_code == 503
        assert again.json()["checks"] == first.json()["checks"]
    assert again.json()["age_s"] == pytest.approx(2.0)
    assert counted_checks == {"database": 1, "broker": 1, "workers": 1}
    # once the window has passed, the next probe checks again
    now[0] += 1.0
    assert client.get("/readyz").json()["age_s"] == 0.0
    assert counted_checks == {"database": 2, "broker": 2, "workers": 2}


@pytest.mark.django_db(transaction=True)
def test_probes_arriving_while_the_checks_run_wait_for_that_round(counted_checks, settings):
    settings.MEDHELM_READYZ_CACHE_SECONDS = 60.0
    answers = run_at_once(health.readiness, threads=8)
    assert len(answers) == 8
    assert counted_checks["workers"] == 1
    assert len({id(answer["checks"]) for answer in answers}) == 1


@pytest.mark.django_db
def test_a_zero_window_checks_on_every_probe(client, counted_checks, settings):
    settings.MEDHELM_READYZ_CACHE_SECONDS = 0
    for _ in range(3):
        client.get("/readyz")
    assert counted_checks["workers"] == 3
