"""Single sign-on is configured from the environment: off by default, refused when half
set, and with `check --deploy` still clean when on."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from django.conf import settings

SNIPPET = (
    "import django, json; django.setup(); from django.conf import settings as s; "
    "from medhelm_site.accounts.sso.config import sso_config; c = sso_config(); "
    "print(json.dumps({'on': c is not None, 'name': c and c.provider_name, "
    "'form_action': s.CONTENT_SECURITY_POLICY['DIRECTIVES']['form-action']}))"
)
CONFIGURED = {
    "MEDHELM_OIDC_CLIENT_ID": "medhelm",
    "MEDHELM_OIDC_CLIENT_SECRET": "s3cret",
    "MEDHELM_OIDC_ISSUER": "https://login.hospital.example/realms/staff/",
    "MEDHELM_OIDC_PROVIDER_NAME": "Hospital ID",
}


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess:
    # The browser tests' conftest sets DJANGO_ALLOW_ASYNC_UNSAFE in this process, which
    # `check --deploy` rightly reports; a deployment does not have it.
    clean = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("MEDHELM_OIDC_") and k != "DJANGO_ALLOW_ASYNC_UNSAFE"
    }
    return subprocess.run(
        [sys.executable, *args],
        env={**clean, "DJANGO_SETTINGS_MODULE": "medhelm_site.test_settings", **env},
        cwd=settings.BASE_DIR,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _values(env: dict[str, str]) -> dict:
    done = _run(["-c", SNIPPET], env)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_sso_is_off_by_default():
    assert _values({}) == {"on": False, "name": None, "form_action": ["'self'"]}


def test_sso_on_allows_the_providers_logout_as_a_form_redirect():
    assert _values(CONFIGURED) == {
        "on": True,
        "name": "Hospital ID",
        "form_action": ["'self'", "https://login.hospital.example"],
    }


def test_staff_are_matched_by_email_only_when_the_environment_says_so():
    snippet = (
        "import django; django.setup(); "
        "from medhelm_site.accounts.sso.config import sso_config; "
        "print(sso_config().match_staff_by_email)"
    )
    for env, shown in (({}, "False"), ({"MEDHELM_OIDC_MATCH_STAFF_BY_EMAIL": "1"}, "True")):
        done = _run(["-c", snippet], {**CONFIGURED, **env})
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip().splitlines()[-1] == shown


def test_a_client_id_without_secret_or_issuer_is_refused_by_name():
    done = _run(["-c", SNIPPET], {"MEDHELM_OIDC_CLIENT_ID": "medhelm"})
    assert done.returncode != 0
    assert "single sign-on also needs MEDHELM_OIDC_CLIENT_SECRET and MEDHELM_OIDC_ISSUER" in (
        done.stderr
    )


def test_check_deploy_stays_clean_with_sso_on(tmp_path):
    production = {
        **CONFIGURED,
        "DJANGO_SETTINGS_MODULE": "medhelm_site.settings",
        "DJANGO_DEBUG": "0",
        "SECRET_KEY": "k" * 20 + "-production-like-key-with-enough-entropy-9f3a1c",
        "ALLOWED_HOSTS": "medhelm.hospital.example",
        "MEDHELM_DATA_DIR": str(tmp_path),
    }
    done = _run(["manage.py", "check", "--deploy", "--fail-level", "WARNING"], production)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "no issues" in done.stdout
