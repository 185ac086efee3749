"""Run as a child process (`python -m tests.support.json_log_requests`) with
MEDHELM_LOG_FORMAT=json on a test database: drives the requests described by the JSON on
stdin through the real settings' logging (its JSON formatter, its redaction filter and the
request log), then logs an accidental dump of the settings' secrets and a traceback holding
one. Everything logged goes to stderr, for the test to read."""

from __future__ import annotations

import json
import logging
import sys

import django


def main() -> None:
    spec = json.load(sys.stdin)
    django.setup()
    from django.conf import settings
    from django.test import Client
    from django.test.utils import setup_test_environment

    setup_test_environment()
    client = Client()
    answers: dict[str, int] = {}
    # a wrong password, then the right one (the login form)
    login = {"username": spec["username"], "password": spec["wrong_password"]}
    answers["login-wrong"] = client.post("/accounts/login/", login).status_code
    login["password"] = spec["password"]
    answers["login"] = client.post("/accounts/login/", login).status_code
    # a rating with a comment, then one refused (a value off the scale) with a comment
    submit = f"/api/assignments/{spec['handle']}/submit/"
    answers["submit"] = client.post(
        submit, {"answers": spec["answers"]}, content_type="application/json"
    ).status_code
    refused = {**spec["answers"], "accuracy": {"value": 99, "comment": spec["comment"]}}
    answers["submit-refused"] = client.post(
        submit, {"answers": refused}, content_type="application/json"
    ).status_code
    # the API with a token, and with a token that is not one
    api = Client()
    answers["api-token"] = api.get(
        "/api/studies/", HTTP_AUTHORIZATION=f"Token {spec['token']}"
    ).status_code
    answers["api-bad-token"] = api.get(
        "/api/studies/", HTTP_AUTHORIZATION=f"Token {spec['bad_token']}"
    ).status_code
    # back from the single sign-on provider with an authorization code and a state this
    # browser never asked for (refused, back to the login page)
    callback = f"/accounts/sso/callback/?code={spec['sso_code']}&state={spec['sso_state']}"
    answers["sso-callback"] = Client().get(callback).status_code
    # what a careless line could write: the settings' secrets and a traceback with one
    careless = logging.getLogger("medhelm.careless")
    careless.warning(
        "settings %s broker %s sso %s back from %s",
        {"SECRET_KEY": settings.SECRET_KEY, "DATABASES": settings.DATABASES},
        settings.JURY_LIMITER_REDIS_URL,
        settings.MEDHELM_OIDC_CLIENT_SECRET,
        callback,
        extra={"token": spec["token"], "headers": f"Authorization: Token {spec['token']}"},
    )
    try:
        raise RuntimeError(f"could not reach postgres://medhelm:{spec['url_password']}@db/x")
    except RuntimeError:
        careless.exception("failed with password=%s", spec["password"])
    print(json.dumps(answers))


if __name__ == "__main__":
    main()
