"""Celery tasks of the annotation app: thin wrappers around services."""

from __future__ import annotations

import socket

from celery import shared_task

from annotation.models import RatingStudy


@shared_task(name="annotation.worker_health")
def worker_health() -> dict[str, object]:
    """Prove that a worker runs and reaches the database (used by health checks and tests)."""
    return {"host": socket.gethostname(), "studies": RatingStudy.objects.count()}
