"""Background work: Celery (broker, results, queues and routes, the demo's workers), the
jury's rate limits, sweep and circuit breaker, the agreement reports' jobs, and the tasks
that compose the apps by name."""

from __future__ import annotations

import os

from medhelm_site.common import task_names
from medhelm_site.settings.core import DATA_DIR, DATABASES
from medhelm_site.settings.env import env_bool, env_list, env_positive_int

# Celery. The embedded default is kombu's SQLAlchemy transport on a SQLite file: it needs no
# server, and a long jury run still runs in a worker process, never inside a web request.
_default_broker = f"sqla+sqlite:///{DATA_DIR / 'celery-broker.sqlite3'}"
CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", _default_broker)
if "CELERY_RESULT_BACKEND" in os.environ:
    CELERY_RESULT_BACKEND = os.environ["CELERY_RESULT_BACKEND"]
elif CELERY_BROKER_URL.startswith(("redis://", "rediss://")):
    CELERY_RESULT_BACKEND = CELERY_BROKER_URL
else:
    CELERY_RESULT_BACKEND = f"db+sqlite:///{DATA_DIR / 'celery-results.sqlite3'}"
# Workers keep database connections for DATABASE_CONN_MAX_AGE, as the web server does
# (medhelm_site.celery closes those past their age around each task); without this, Celery
# closes every connection before and after every task.
CELERY_DB_REUSE_MAX = 2**31 if DATABASES["default"].get("CONN_MAX_AGE") else None
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True  # a task whose worker dies is delivered again (tasks are idempotent)
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_RESULT_EXTENDED = True
CELERY_TASK_TRACK_STARTED = True
CELERY_BEAT_SCHEDULE_FILENAME = os.environ.get(
    "CELERY_BEAT_SCHEDULE_FILENAME", str(DATA_DIR / "celerybeat-schedule")
)

# Jury rate limits (per-judge concurrency and requests per minute, across every worker):
# "auto" keeps them in Redis when the Celery broker is Redis, else in the database (SQLite
# and the embedded broker); "redis" or "database" forces one. JURY_LIMITER_REDIS_URL names
# another Redis than the broker's.
JURY_LIMITER = os.environ.get("JURY_LIMITER", "auto")
JURY_LIMITER_REDIS_URL = os.environ.get("JURY_LIMITER_REDIS_URL", "")
# The prefix of the limiter's Redis keys (two sites on one Redis need two prefixes).
JURY_LIMITER_PREFIX = os.environ.get("JURY_LIMITER_PREFIX", "medhelm:jury:limits:")
# A call that waited this long for a slot of its judge's limits gives up its turn (and is
# logged); the sweep sends it again.
JURY_MAX_WAIT_FOR_SLOT_SECONDS = float(os.environ.get("JURY_MAX_WAIT_FOR_SLOT_SECONDS", "600"))
# The sweep (Celery beat, jury.execution.sweep): every interval, while no worker holds a call
# and none ended for the grace period, pending calls last sent before the grace period are
# sent again; after the given number of re-dispatches they end as provider errors.
JURY_SWEEP_INTERVAL_SECONDS = float(os.environ.get("JURY_SWEEP_INTERVAL_SECONDS", "60"))
JURY_SWEEP_GRACE_SECONDS = float(os.environ.get("JURY_SWEEP_GRACE_SECONDS", "300"))
JURY_SWEEP_MAX_REDISPATCHES = int(os.environ.get("JURY_SWEEP_MAX_REDISPATCHES", "3"))
CELERY_BEAT_SCHEDULE = {
    "jury-sweep": {
        "task": task_names.SWEEP_CALLS,
        "schedule": JURY_SWEEP_INTERVAL_SECONDS,
        # A sweep that waited in the queue past the next one is dropped, not piled up.
        "options": {"expires": JURY_SWEEP_INTERVAL_SECONDS},
    },
}
# When a judge's provider is down (jury.breakers): down signals in a row (connection refused,
# 502/503) that pause the calls of its endpoint, seconds between two probe requests while
# paused, and seconds after which a paused endpoint nobody probes is forgotten.
JURY_BREAKER_THRESHOLD = env_positive_int("JURY_BREAKER_THRESHOLD", 3)
JURY_BREAKER_PROBE_SECONDS = float(os.environ.get("JURY_BREAKER_PROBE_SECONDS", "5"))
JURY_BREAKER_FORGET_SECONDS = float(os.environ.get("JURY_BREAKER_FORGET_SECONDS", "120"))
# What a judge defined in the admin may use. Its API key variable: MEDHELM_JUDGE_KEY_<NAME>,
# or one listed here (comma-separated; the site's own secrets never). Its endpoint: a host
# listed here ("*.domain" for one label; an IP address only on loopback, http only there).
JURY_ALLOWED_KEY_VARIABLES = env_list("JURY_ALLOWED_KEY_VARIABLES", "")
JURY_ALLOWED_HOSTS = env_list(
    "JURY_ALLOWED_HOSTS",
    "api.openai.com,api.anthropic.com,*.openai.azure.com,127.0.0.1,localhost,::1",
)

# A report being computed in the background (agreement.services.jobs) writes progress every
# second or so; one with none for this long has lost its worker and is failed with the reason.
AGREEMENT_REPORT_STALE_SECONDS = env_positive_int("AGREEMENT_REPORT_STALE_SECONDS", 600)
# The pages and the API queue reports for a Celery worker; off, they compute in the request.
AGREEMENT_REPORTS_IN_BACKGROUND = env_bool("AGREEMENT_REPORTS_IN_BACKGROUND", True)
# How many processes compute a report's rows and draw its figure files at once beside the task
# that computes it (agreement.processes); 0 (unset): one per core the process may use, at most
# 4; 1: everything in the task's own process. AGREEMENT_REPORT_THREADS is its former name.
AGREEMENT_REPORT_PROCESSES = env_positive_int(
    "AGREEMENT_REPORT_PROCESSES", env_positive_int("AGREEMENT_REPORT_THREADS", 0)
)

# Composition of the apps, by task name (medhelm_site.common.task_names), so that no app
# imports one further up the chain (delphi <- annotation <- jury <- agreement):
# Celery tasks run with the ImportJob id after an item import succeeds (each decides whether
# the job concerns it); set to an empty string to run none.
MEDHELM_AFTER_IMPORT_TASKS = env_list("MEDHELM_AFTER_IMPORT_TASKS", task_names.IMPORT_HELM_VERDICTS)
# The seconds the refresh of a study's agreement watch (sent when ratings arrive) waits first,
# so that a burst of submissions makes one refresh (the debounce).
MEDHELM_WATCH_DEBOUNCE_SECONDS = float(os.environ.get("MEDHELM_WATCH_DEBOUNCE_SECONDS", "10"))
# Management commands that load the demo, in order (`manage.py rundemo`).
MEDHELM_DEMO_LOADERS = ["load_demo", "load_demo_jury", "load_demo_delphi"]

# Celery queues. Judge calls take seconds to minutes each and a run sends thousands; the
# automatic metrics take seconds for a whole study: each has its own queue, so that a worker
# can serve the metrics while others work through the jury. A planning simulation may take
# minutes of a core: its own queue, so that imports and reports never wait behind one.
# Imports and everything else use the default queue. A worker started without --queues consumes every queue declared here; a
# route to an undeclared queue fails when the task is sent (medhelm_site.checks says so at
# startup), never leaving the task where no worker looks.
CELERY_TASK_DEFAULT_QUEUE = "celery"
CELERY_TASK_QUEUES = {"celery": {}, "metrics": {}, "jury": {}, "planning": {}}
CELERY_TASK_CREATE_MISSING_QUEUES = False
CELERY_TASK_ROUTES = {
    task_names.COMPUTE_METRICS: {"queue": "metrics"},
    task_names.EXECUTE_CALL: {"queue": "jury"},
    task_names.EXECUTE_CALLS: {"queue": "jury"},
    task_names.SIMULATE_DESIGN: {"queue": "planning"},
}
# The demo's Celery workers (`manage.py rundemo`): name -> the queues it consumes and its
# processes. The jury's worker takes the judge calls; the planning one the simulations (one
# at a time); the other serves the metrics and the default queue at once, whatever the jury
# or the planners have queued.
MEDHELM_DEMO_WORKERS = {
    # The sweep task goes to the default queue ("celery"): beat runs in the worker that takes it.
    "demo": {"queues": ["celery", "metrics"], "concurrency": 1, "beat": True},
    "demo-jury": {"queues": ["jury"], "concurrency": 2},
    "demo-planning": {"queues": ["planning"], "concurrency": 1},
}
