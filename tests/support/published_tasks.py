"""The Celery tasks a block of code sends, as their names: counted at Celery's own
before_task_publish signal, so every way of sending (send_task, delay, on-commit callbacks
once run) is seen, and nothing is replaced."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from celery.signals import before_task_publish


@contextmanager
def tasks_published() -> Iterator[list[str]]:
    names: list[str] = []

    def record(sender=None, headers=None, **_) -> None:
        names.append((headers or {}).get("task") or str(sender))

    before_task_publish.connect(record, weak=False)
    try:
        yield names
    finally:
        before_task_publish.disconnect(record)
