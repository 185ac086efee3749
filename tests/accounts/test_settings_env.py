"""The throttle, token and session limits come from the environment."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from django.conf import settings

SNIPPET = (
    "import django, json; django.setup(); from django.conf import settings as s; "
    "print(json.dumps({'limit': s.AXES_FAILURE_LIMIT, 'cool': s.AXES_COOLOFF_TIME.total_seconds(), "
    "'ttl': s.REST_KNOX['TOKEN_TTL'].total_seconds(), 'idle': s.SESSION_IDLE_SECONDS, "
    "'cookie': s.SESSION_COOKIE_AGE, 'proxies': s.LOGIN_PROXY_COUNT}))"
)


def _run(env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", SNIPPET],
        env={**os.environ, "DJANGO_SETTINGS_MODULE": "medhelm_site.test_settings", **env},
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_limits_from_the_environment():
    done = _run(
        {
            "LOGIN_FAILURE_LIMIT": "7",
            "LOGIN_LOCKOUT_MINUTES": "10",
            "API_TOKEN_DAYS": "2",
            "SESSION_IDLE_MINUTES": "15",
            "LOGIN_PROXY_COUNT": "1",
        }
    )
    assert done.returncode == 0, done.stderr
    values = json.loads(done.stdout.strip().splitlines()[-1])
    assert values == {
        "limit": 7,
        "cool": 600.0,
        "ttl": 2 * 86400.0,
        "idle": 900,
        "cookie": 900,
        "proxies": 1,
    }


def test_a_bad_limit_is_refused_by_name():
    done = _run({"LOGIN_FAILURE_LIMIT": "0"})
    assert done.returncode != 0
    assert "LOGIN_FAILURE_LIMIT='0' is not a positive whole number" in done.stderr
