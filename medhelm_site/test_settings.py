"""Settings for the test suite: the real settings, with a throwaway key and fast hashing.

DATABASE_URL and CELERY_BROKER_URL still come from the environment, so the same suite runs
on the embedded defaults and on PostgreSQL + Redis.
"""

import os

os.environ.setdefault("SECRET_KEY", "test-only-key-not-a-secret")


def _worker_redis_url(url: str, worker: str) -> str:
    """The Redis URL `url` moved to the database of pytest-xdist worker `worker` ("gw0",
    "gw1", ...): the base database number plus the worker's index."""
    from urllib.parse import urlsplit, urlunsplit

    parts = urlsplit(url)
    base = int(parts.path.lstrip("/") or 0)
    return urlunsplit(parts._replace(path=f"/{base + int(worker.removeprefix('gw'))}"))


# `make test` runs the suite in parallel processes (pytest-xdist). On a Redis broker, each
# process's tasks and the Celery workers its tests start get a Redis database of their own, or
# a worker started by one process could take a task queued by the other, against the other's
# test database. Written back to the environment, so that every process a test starts (a
# worker, a `manage.py` command) inherits the same broker. Only the test process itself
# moves it: the processes its tests start inherit MEDHELM_TEST_PROCESS and keep the broker
# they are given (a test may start a worker on a broker of its own).
_XDIST_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _XDIST_WORKER and os.environ.get("MEDHELM_TEST_PROCESS") != _XDIST_WORKER:
    os.environ["MEDHELM_TEST_PROCESS"] = _XDIST_WORKER
    if os.environ.get("CELERY_BROKER_URL", "").startswith("redis://"):
        os.environ["CELERY_BROKER_URL"] = _worker_redis_url(
            os.environ["CELERY_BROKER_URL"], _XDIST_WORKER
        )

# In a parallel run each test process gets one core's worth of threads: numpy's BLAS and the
# OpenMP pools (torch's, for BERTScore) start a thread per core and spin while they wait for a
# core the other process holds, as llama.cpp's second thread did in the local-model tests (12 s
# alone, 136 s in a two-process run). Set before those libraries load, and in the environment,
# so that the servers and workers the tests start inherit it.
if _XDIST_WORKER:
    # a report's rows and figure files in the test's own process too (agreement.processes):
    # the other test process has the other core
    for _pool in (
        "OMP_NUM_THREADS",
        "OPENBLAS_NUM_THREADS",
        "MKL_NUM_THREADS",
        "AGREEMENT_REPORT_PROCESSES",
    ):
        os.environ.setdefault(_pool, "1")

from medhelm_site.settings import *  # noqa: E402, F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
EMAIL_BACKEND = "django.core.mail.backends.locmem.EmailBackend"
SECURE_SSL_REDIRECT = False
SESSION_COOKIE_SECURE = False
CSRF_COOKIE_SECURE = False
STORAGES["staticfiles"]["BACKEND"] = "django.contrib.staticfiles.storage.StaticFilesStorage"  # noqa: F405

# Tests never touch the developer's demo files (credentials, broker, database).
DATA_DIR = BASE_DIR / "var" / "test"  # noqa: F405
DATA_DIR.mkdir(parents=True, exist_ok=True)

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    # A file, not memory: Celery worker processes started by the tests must see the same data.
    # One file per test session, so that two test runs at once never share a database.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / f"test-db-{os.getpid()}.sqlite3")}  # noqa: F405

if "CELERY_BROKER_URL" not in os.environ:
    # The embedded broker of this test session alone (not the demo's in var/): tasks the
    # tests queue are seen only by the workers this session starts, and none is left over.
    CELERY_BROKER_URL = f"sqla+sqlite:///{DATA_DIR / f'celery-broker-{os.getpid()}.sqlite3'}"
    if "CELERY_RESULT_BACKEND" not in os.environ:
        CELERY_RESULT_BACKEND = f"db+sqlite:///{DATA_DIR / f'celery-results-{os.getpid()}.sqlite3'}"
