"""The Celery application. Broker and result backend come from settings (settings/workers.py)."""

import os
from typing import Any

from celery import Celery, Task
from celery.signals import task_postrun, task_prerun

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "medhelm_site.settings")

app = Celery("medhelm_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_prerun.connect
@task_postrun.connect
def close_old_connections(sender: Task | None = None, **kwargs: Any) -> None:
    """Around each task, close the database connections past DATABASE_CONN_MAX_AGE or left
    unusable, as Django does around each web request. Celery's own Django fixup would close
    every connection before and after every task (settings.CELERY_DB_REUSE_MAX switches that
    off): a new PostgreSQL backend per task, which cost the jury's chunk tasks more CPU than
    their queries. Not for eager tasks, which run inside the caller's transaction."""
    if sender is not None and getattr(sender.request, "is_eager", False):
        return
    from django.db import close_old_connections as close

    close()
