"""The Celery wiring checked at startup (`manage.py check`, rundemo): no task is routed to a
queue that no worker consumes."""

from __future__ import annotations

from django.core.checks import ERROR, run_checks


def celery_messages():
    return [m for m in run_checks() if m.id.startswith("medhelm.celery")]


def test_the_sites_own_queues_all_have_a_consumer():
    assert celery_messages() == []


def test_a_route_to_an_undeclared_queue_is_an_error(settings):
    settings.CELERY_TASK_ROUTES = {
        **settings.CELERY_TASK_ROUTES,
        "jury.sweep": {"queue": "sweeps"},
    }
    [message] = celery_messages()
    assert message.level == ERROR
    assert "'sweeps'" in message.msg and "jury.sweep" in message.msg


def test_a_queue_the_demo_workers_leave_out_is_named(settings):
    settings.MEDHELM_DEMO_WORKERS = {
        "demo": {"queues": ["celery"], "concurrency": 1},
        "demo-jury": {"queues": ["jury"], "concurrency": 2},
        "demo-planning": {"queues": ["planning"], "concurrency": 1},
    }
    [message] = celery_messages()
    assert "'metrics'" in message.msg and "jury.compute_metrics" in message.msg
    assert "MEDHELM_DEMO_WORKERS" in message.msg


def test_a_demo_worker_on_an_undeclared_queue_is_named(settings):
    settings.MEDHELM_DEMO_WORKERS = {
        **settings.MEDHELM_DEMO_WORKERS,
        "demo-extra": {"queues": ["imports"], "concurrency": 1},
    }
    [message] = celery_messages()
    assert "demo-extra" in message.msg and "'imports'" in message.msg
