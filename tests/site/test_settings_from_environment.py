"""Settings come from the environment; production refuses to start without a secret key."""

from __future__ import annotations

import os
import subprocess
import sys

from django.conf import settings

SNIPPET = (
    "import django, json; django.setup(); from django.conf import settings as s; "
    "print(json.dumps({'engine': s.DATABASES['default']['ENGINE'], 'name': str(s.DATABASES['default']['NAME']), "
    "'broker': s.CELERY_BROKER_URL, 'backend': s.CELERY_RESULT_BACKEND, 'debug': s.DEBUG, 'email': s.EMAIL_BACKEND}))"
)


def _settings_with(env: dict[str, str]) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k
        not in {
            "DATABASE_URL",
            "CELERY_BROKER_URL",
            "CELERY_RESULT_BACKEND",
            "SECRET_KEY",
            "DJANGO_DEBUG",
        }
    }
    return subprocess.run(
        [sys.executable, "-c", SNIPPET],
        env={**clean, "DJANGO_SETTINGS_MODULE": "medhelm_site.settings", **env},
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_embedded_defaults_need_no_server(tmp_path):
    out = _settings_with({"DJANGO_DEBUG": "1", "MEDHELM_DATA_DIR": str(tmp_path)})
    assert out.returncode == 0, out.stderr
    import json

    got = json.loads(out.stdout)
    assert got["engine"] == "django.db.backends.sqlite3" and got["name"].startswith(str(tmp_path))
    assert got["broker"].startswith("sqla+sqlite:///") and str(tmp_path) in got["broker"]
    assert got["backend"].startswith("db+sqlite:///")
    assert got["email"].endswith("console.EmailBackend")


def test_services_by_url_with_nothing_else_changed(tmp_path):
    out = _settings_with(
        {
            "DJANGO_DEBUG": "1",
            "MEDHELM_DATA_DIR": str(tmp_path),
            "DATABASE_URL": "postgres://postgres@127.0.0.1:5432/test",
            "CELERY_BROKER_URL": "redis://127.0.0.1:6379/0",
        }
    )
    assert out.returncode == 0, out.stderr
    import json

    got = json.loads(out.stdout)
    assert got["engine"] == "django.db.backends.postgresql" and got["name"] == "test"
    assert got["broker"] == got["backend"] == "redis://127.0.0.1:6379/0"


def test_production_without_secret_key_refuses_to_start(tmp_path):
    out = _settings_with({"DJANGO_DEBUG": "0", "MEDHELM_DATA_DIR": str(tmp_path)})
    assert out.returncode != 0
    assert "SECRET_KEY is not set" in out.stderr


def test_a_malformed_boolean_is_named(tmp_path):
    out = _settings_with({"DJANGO_DEBUG": "maybe", "MEDHELM_DATA_DIR": str(tmp_path)})
    assert out.returncode != 0
    assert "DJANGO_DEBUG='maybe' is not a boolean" in out.stderr
