"""The deployment tests' parts: scratch PostgreSQL databases, a Redis database of their own,
the environment of a production installation and manage.py runs in it. The tests run the
scripts under docs/deploy/ as an operator would, in processes of their own, outside
pytest-django's test database.

PostgreSQL: the server of DATABASE_URL when it names one (CI's second run), else
MEDHELM_TEST_POSTGRES_URL, else postgres://postgres@127.0.0.1:5432/medhelm; databases named
<that database>_<purpose>_<pid> are created there and dropped afterwards. Redis:
MEDHELM_DEPLOY_TEST_REDIS_URL, else database 14 of the broker's Redis server (or of
127.0.0.1:6379), flushed before and after (it must be one no one else uses). Where either is
unreachable the test is skipped naming it, except under CI=true, where it fails.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.support.unavailable import unavailable

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "docs" / "deploy"
DEFAULT_POSTGRES = "postgres://postgres@127.0.0.1:5432/medhelm"
REDIS_TEST_DB = 14


def _with_database(url: str, name: str) -> str:
    parts = urlsplit(url)
    return urlunsplit(parts._replace(path=f"/{name}"))


def _shown(url: str) -> str:
    """The URL without its password, for messages."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    return urlunsplit(parts._replace(netloc=f"{host}:{parts.port or ''}", query=""))


def postgres_server() -> str:
    """The URL of a reachable PostgreSQL server's database (see the module's docstring)."""
    url = DEFAULT_POSTGRES
    for name in ("DATABASE_URL", "MEDHELM_TEST_POSTGRES_URL"):
        if os.environ.get(name, "").startswith(("postgres://", "postgresql://")):
            url = os.environ[name]
            break
    import psycopg

    try:
        psycopg.connect(_with_database(url, "postgres"), connect_timeout=3).close()
    except psycopg.Error as exc:
        unavailable(f"PostgreSQL is not reachable at {_shown(url)}: {type(exc).__name__}")
    return url


@contextlib.contextmanager
def scratch_database(server_url: str, purpose: str) -> Iterator[str]:
    """A new, empty database on the server of `server_url`, dropped afterwards."""
    import psycopg

    base = urlsplit(server_url).path.lstrip("/") or "medhelm"
    name = f"{base}_{purpose}_{os.getpid()}"
    admin = _with_database(server_url, "postgres")
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}"')
    try:
        yield _with_database(server_url, name)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def redis_database() -> Iterator[str]:
    """The URL of a Redis database for the test alone, flushed before and after."""
    import redis

    url = os.environ.get("MEDHELM_DEPLOY_TEST_REDIS_URL", "")
    if not url:
        broker = os.environ.get("CELERY_BROKER_URL", "")
        server = urlsplit(broker if broker.startswith("redis://") else "redis://127.0.0.1:6379")
        url = urlunsplit(server._replace(path=f"/{REDIS_TEST_DB}", query=""))
    client = redis.Redis.from_url(url, socket_connect_timeout=3)
    try:
        client.ping()
    except redis.RedisError as exc:
        unavailable(f"Redis is not reachable at {_shown(url)}: {type(exc).__name__}")
    client.flushdb()
    try:
        yield url
    finally:
        client.flushdb()
        client.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def production_env(*, database_url: str, data_dir: Path, broker_url: str = "") -> dict[str, str]:
    """The environment of a production installation (docs/deployment.md): DEBUG off, its own
    SECRET_KEY, ALLOWED_HOSTS, JSON logs; nothing inherited from the test session's settings.
    Plain HTTP on loopback (no proxy terminating TLS in front): no redirect to HTTPS and
    cookies not marked Secure, as USE_X_FORWARDED_PROTO would make them behind a proxy."""
    inherited = ("DJANGO_", "CELERY_", "MEDHELM_", "DATABASE_", "JURY_", "AGREEMENT_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(inherited)}
    env.update(
        DJANGO_SETTINGS_MODULE="medhelm_site.settings",
        DJANGO_DEBUG="0",
        SECRET_KEY=secrets.token_urlsafe(50),
        ALLOWED_HOSTS="127.0.0.1,localhost",
        DATABASE_URL=database_url,
        MEDHELM_DATA_DIR=str(data_dir),
        MEDHELM_LOG_FORMAT="json",
        PYTHON=sys.executable,
        SECURE_SSL_REDIRECT="0",
        SESSION_COOKIE_SECURE="0",
        CSRF_COOKIE_SECURE="0",
    )
    if broker_url:
        env["CELERY_BROKER_URL"] = broker_url
    return env


def run(command: list[str], env: dict[str, str], timeout: float = 600) -> str:
    """Run a command from the checkout; its stdout, or a failure showing its output."""
    done = subprocess.run(
        command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    if done.returncode != 0:
        pytest.fail(
            f"{' '.join(command)} exited with {done.returncode}\n"
            f"stdout:\n{done.stdout[-4000:]}\nstderr:\n{done.stderr[-4000:]}"
        )
    return done.stdout


def manage(env: dict[str, str], *args: str) -> str:
    return run([sys.executable, "manage.py", *args], env)


def django_json(env: dict[str, str], code: str) -> object:
    """The value printed (as JSON, on the last line) by `code` run in `manage.py shell`."""
    out = manage(env, "shell", "-c", code)
    return json.loads(out.strip().splitlines()[-1])


MODEL_COUNTS = (
    "import json; from django.apps import apps; print(json.dumps({m._meta.label: "
    "m._default_manager.count() for m in apps.get_models()}, sort_keys=True))"
)


def model_counts(env: dict[str, str]) -> dict[str, int]:
    """The number of rows of every model of the installation named by `env`."""
    counts = django_json(env, MODEL_COUNTS)
    assert isinstance(counts, dict)
    return counts
