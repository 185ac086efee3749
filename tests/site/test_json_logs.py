"""MEDHELM_LOG_FORMAT=json: one JSON object per line, and no secret or study content in any.

A child process runs the real settings with the JSON format on this test's database and
drives a login (wrong password, then the right one), a rating submitted with a comment and
one refused with a comment, the API with a token and with a wrong token, a single sign-on
callback carrying an authorization code and state, then writes a careless dump of the
settings' secrets (and of that callback's URL) and a traceback holding a password. Its whole log
must name every request it made and contain none of those values.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys

import pytest
from django.conf import settings
from django.db import connection
from django.test import override_settings

from annotation.models import Assignment
from medhelm_site.accounts.services import create_token
from medhelm_site.logs import REDACTED, JsonFormatter, RedactSecrets
from tests.factories import TEST_PASSWORD
from tests.support import celery_worker

SECRETS = {
    "secret_key": "site-secret-key-9f8e7d6c5b4a-never-logged",
    "wrong_password": "wrong-password-Qx7!never-logged",
    "bad_token": "0123456789abcdef0123456789abcdef01234567",
    "url_password": "url-password-z1y2x3",
    "limiter_password": "limiter-password-k9j8h7",
    "judge_key": "sk-judge-key-never-logged-4455",
    "db_password": "db-password-never-logged-6677",
    "sso_code": "SplxlOBeZQQYbYS6WxSbIA-authorization-code",
    "sso_state": "af0ifjsldkj-state-never-logged",
    "oidc_client_secret": "oidc-client-secret-never-logged-8899",
}
COMMENT = "Patient comment text: dose of 40 mg looked wrong"


def _child(spec: dict, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "tests.support.json_log_requests"],
        input=json.dumps(spec),
        env={**os.environ, **env},
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _database_url_with_a_password() -> str:
    url = celery_worker.test_database_url()
    if connection.vendor == "postgresql":  # trust authentication ignores the password
        return url.replace("postgres://postgres@", f"postgres://postgres:{SECRETS['db_password']}@")
    return url


@pytest.mark.django_db(transaction=True)
def test_json_logs_of_real_requests_hold_no_secret_and_no_study_content(study_with_members):
    clinician = study_with_members.clinicians[0]
    assignment = Assignment.objects.filter(clinician=clinician).order_by("position").first()
    # the token remembers its owner's password through a hash keyed by SECRET_KEY: issued
    # under the child's key, as a token of that installation is
    with override_settings(SECRET_KEY=SECRETS["secret_key"]):
        token = create_token(user=clinician)[1]
    answers = {
        "accuracy": {"value": 4},
        "completeness": {"value": 3},
        "clarity": {"value": 5, "comment": COMMENT},
    }
    spec = {
        "username": clinician.username,
        "password": TEST_PASSWORD,
        "handle": assignment.handle,
        "answers": answers,
        "comment": COMMENT,
        "token": token,
        **SECRETS,
    }
    out = _child(
        spec,
        {
            "DJANGO_SETTINGS_MODULE": "medhelm_site.test_settings",
            "MEDHELM_LOG_FORMAT": "json",
            "LOG_LEVEL": "DEBUG",
            "SECRET_KEY": SECRETS["secret_key"],
            "DATABASE_URL": _database_url_with_a_password(),
            "JURY_LIMITER_REDIS_URL": f"redis://:{SECRETS['limiter_password']}@127.0.0.1:6379/9",
            "MEDHELM_JUDGE_KEY_TESTJUDGE": SECRETS["judge_key"],
            # single sign-on on (its provider is never reached: the callback is refused)
            "MEDHELM_OIDC_CLIENT_ID": "medhelm-test",
            "MEDHELM_OIDC_CLIENT_SECRET": SECRETS["oidc_client_secret"],
            "MEDHELM_OIDC_ISSUER": "https://id.hospital.invalid/realms/test",
        },
    )
    assert out.returncode == 0, out.stderr
    statuses = json.loads(out.stdout.strip().splitlines()[-1])
    assert statuses == {
        "login-wrong": 200,
        "login": 302,
        "submit": 200,
        "submit-refused": 400,
        "api-token": 200,
        "api-bad-token": 401,
        "sso-callback": 302,
    }
    lines = [line for line in out.stderr.splitlines() if line.startswith("{")]
    entries = [json.loads(line) for line in lines]
    # every request is in the log, as one JSON line of the request log
    requests = [
        (e["method"], e["path"], e["status_code"])
        for e in entries
        if e["logger"] == "medhelm.request"
    ]
    submit = f"/api/assignments/{assignment.handle}/submit/"
    assert requests == [
        ("POST", "/accounts/login/", 200),
        ("POST", "/accounts/login/", 302),
        ("POST", submit, 200),
        ("POST", submit, 400),
        ("GET", "/api/studies/", 200),
        ("GET", "/api/studies/", 401),
        ("GET", "/accounts/sso/callback/", 302),
    ]
    careless = [e for e in entries if e["logger"] == "medhelm.careless"]
    assert len(careless) == 2 and REDACTED in careless[0]["message"]
    assert careless[0]["token"] == REDACTED and "exception" in careless[1]
    # none of the values: passwords, tokens, keys, the comment, the item text
    whole = out.stderr
    forbidden = {
        **SECRETS,
        "password": TEST_PASSWORD,
        "token": token,
        "comment": COMMENT,
        "item text": assignment.item.input_text,
    }
    if connection.vendor != "postgresql":
        forbidden.pop("db_password")
    leaked = {name: value for name, value in forbidden.items() if value in whole}
    assert not leaked, f"leaked into the logs: {leaked}\n{whole}"


def _record(message: str, *args, **extra) -> logging.LogRecord:
    record = logging.LogRecord("t", logging.INFO, __file__, 1, message, args, None)
    for name, value in extra.items():
        setattr(record, name, value)
    return record


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("Authorization: Bearer abcdef123456789", "abcdef123456789"),
        ("{'HTTP_AUTHORIZATION': 'Token 9944b09199c62bcf9418ad846dd0e4bbdfc6ee4b'}", "9944b0919"),
        ('{"password": "hunter2hunter2"}', "hunter2"),
        ("csrfmiddlewaretoken=QWERTYUIOP1234&x=1", "QWERTYUIOP1234"),
        ("Cookie: sessionid=abc123def456; csrftoken=zzz", "abc123def456"),
        ("redis://:p4ssw0rd-x@redis:6379/0", "p4ssw0rd-x"),
        ("GET /delphi/join/Zx81kQ-aa_77pp/ 200", "Zx81kQ-aa_77pp"),
        ("GET /accounts/password/reset/MQ/c8k2xz-0b1f2e3d4c5b6a79/ 200", "c8k2xz-0b1f2e3d"),
        ("api_key=sk-live-abcdefghij", "sk-live-abcdefghij"),
        ("GET /accounts/sso/callback/?code=SplxlOBeZQQYbYS6WxSbIA&state=af0 302", "SplxlOBeZQ"),
        ("GET /accounts/sso/callback/?state=af0ifjsldkj&code=x1 302", "af0ifjsldkj"),
    ],
)
def test_the_filter_redacts_each_kind_of_secret(text, secret):
    record = _record("seen %s", text)
    assert RedactSecrets().filter(record) is True
    assert secret not in record.getMessage() and REDACTED in record.getMessage()
    assert secret not in JsonFormatter().format(record)


def test_the_filter_keeps_ordinary_text_and_redacts_secret_named_extras():
    record = _record(
        "imported %d items into study %s", 12, "Cardiology 2024", api_token="abc123abc"
    )
    RedactSecrets().filter(record)
    entry = json.loads(JsonFormatter().format(record))
    assert entry["message"] == "imported 12 items into study Cardiology 2024"
    assert entry["api_token"] == REDACTED


def test_the_site_secret_key_is_redacted_wherever_it_appears(settings):
    settings.SECRET_KEY = "a-site-key-that-appears-in-free-text-1234"
    record = _record("oops %s!", f"key was {settings.SECRET_KEY}.")
    RedactSecrets().filter(record)
    assert record.getMessage() == f"oops key was {REDACTED}.!"


def test_an_unknown_log_format_stops_the_start():
    out = subprocess.run(
        [sys.executable, "-c", "import django; django.setup()"],
        env={
            **os.environ,
            "DJANGO_SETTINGS_MODULE": "medhelm_site.test_settings",
            "MEDHELM_LOG_FORMAT": "xml",
        },
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode != 0
    assert "MEDHELM_LOG_FORMAT='xml': use text or json" in out.stderr
