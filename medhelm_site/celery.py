"""The Celery application. Broker and result backend come from settings (see settings.py)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "medhelm_site.settings")

app = Celery("medhelm_site")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
