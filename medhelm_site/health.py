"""Liveness and readiness for load balancers and orchestrators (unauthenticated).

/healthz answers 200 while the process serves requests; it touches nothing else.
/readyz checks what a request may need: the database (a query), the Celery broker (a
connection) and the Celery workers (a broadcast ping, or a task round trip on a broker
without broadcast, waiting settings.MEDHELM_READYZ_PING_TIMEOUT seconds for answers). It answers
200 when every check passes, else 503, with a JSON body naming each check. Neither shows a
secret: a failure is named by its exception's class, never its message (which can hold a URL
with a password).

/readyz is unauthenticated, and its worker check sends a message through the broker (a task on
the embedded broker) and waits for it: so one answer serves every caller for
settings.MEDHELM_READYZ_CACHE_SECONDS, and callers arriving while the checks run wait for
that run instead of starting their own. A flood of probes costs the broker one round of
checks per window and web process, not one per request.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from celery import Celery
from celery.exceptions import TimeoutError as CeleryTimeoutError
from django.conf import settings
from django.db import connection
from django.http import HttpRequest, JsonResponse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from medhelm_site.common import task_names

Check = Callable[[], dict[str, Any]]
WORKER_HEALTH_TASK = task_names.WORKER_HEALTH


def check_database() -> dict[str, Any]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1")
        cursor.fetchone()
    return {"ok": True}


def celery_app() -> Celery:
    """The site's Celery app (a function, so that a test can point the checks elsewhere)."""
    from medhelm_site.celery import app

    return app


def check_broker() -> dict[str, Any]:
    app = celery_app()
    timeout = settings.MEDHELM_READYZ_PING_TIMEOUT
    with app.connection_for_write() as conn:
        conn.ensure_connection(max_retries=1, interval_start=0, interval_step=0, timeout=timeout)
    return {"ok": True}


def check_workers() -> dict[str, Any]:
    """Workers seen by a broadcast ping; on a broker without broadcast (the embedded SQLite
    one) by a real task round trip instead (annotation.worker_health, expiring unanswered)."""
    app = celery_app()
    timeout = settings.MEDHELM_READYZ_PING_TIMEOUT
    with app.connection_for_write() as conn:
        broadcast = getattr(conn.default_channel, "supports_fanout", True)
    if broadcast:
        replies = app.control.ping(timeout=timeout) or []
        seen = sum(len(reply) for reply in replies)
        answer: dict[str, Any] = {"ok": seen > 0, "seen": seen, "via": "ping"}
    else:
        result = app.send_task(WORKER_HEALTH_TASK, expires=timeout)
        try:
            result.get(timeout=timeout)
            seen = 1
        except CeleryTimeoutError:
            seen = 0
        finally:
            result.forget()
        answer = {"ok": seen > 0, "seen": seen, "via": "task"}
    if not seen:
        answer["error"] = "no Celery worker answered"
    return answer


CHECKS: dict[str, Check] = {
    "database": check_database,
    "broker": check_broker,
    "workers": check_workers,
}


def run_check(check: Check) -> dict[str, Any]:
    """One check's answer with its duration; an exception becomes ok=false and its class."""
    started = time.perf_counter()
    try:
        answer = check()
    except Exception as exc:
        answer = {"ok": False, "error": type(exc).__name__}
    answer["duration_ms"] = round((time.perf_counter() - started) * 1000, 1)
    return answer


@never_cache
@require_GET
def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


#: The clock the readiness window is measured on (a test moves it).
clock: Callable[[], float] = time.monotonic
_readiness_lock = threading.Lock()
_last_readiness: tuple[float, dict[str, Any]] | None = None


def forget_readiness() -> None:
    """Drop the remembered answer: the next /readyz runs the checks."""
    global _last_readiness
    with _readiness_lock:
        _last_readiness = None


def readiness() -> dict[str, Any]:
    """Every check's answer, run at most once per MEDHELM_READYZ_CACHE_SECONDS in this
    process; `age_s` says how old the answer is."""
    global _last_readiness
    window = settings.MEDHELM_READYZ_CACHE_SECONDS
    with _readiness_lock:
        now = clock()
        if _last_readiness is not None and now - _last_readiness[0] < window:
            checked_at, checks = _last_readiness
            return {"checks": checks, "age_s": round(now - checked_at, 3)}
        checks = {name: run_check(check) for name, check in CHECKS.items()}
        _last_readiness = (clock(), checks)
        return {"checks": checks, "age_s": 0.0}


@never_cache
@require_GET
def readyz(request: HttpRequest) -> JsonResponse:
    answer = readiness()
    ready = all(check["ok"] for check in answer["checks"].values())
    return JsonResponse(
        {"status": "ok" if ready else "unavailable", **answer},
        status=200 if ready else 503,
    )
