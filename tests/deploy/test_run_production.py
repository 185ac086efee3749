"""docs/deploy/run-production.sh brings up the documented production layout on one machine
(PostgreSQL, Redis, gunicorn with two web workers, two Celery workers and beat, DEBUG off,
the Content-Security-Policy on, hashed static files) with single sign-on configured through
the environment variables the README names, against a real OpenID provider running locally
(tests/support/oidc_provider). The layout comes up once for the module; its tests use it as
a hospital would on its first day: /readyz answers 200 with both workers seen; Chromium signs
a clinician in through the provider, rates and logs out; an unverified e-mail is refused; a
coordinator opens the dashboard, the audit log, the jury's page and a report the workers
compute; wrong passwords lock an account out; whitenoise serves the collected static files;
and finally SIGTERM stops every process cleanly and the logs are JSON.
(The browser steps are in tests/support/production_walk.py.)"""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.support import production_walk as day_one
from tests.support.browser import log_in
from tests.support.deploy import (
    DEPLOY,
    REDIS_TEST_DB,
    django_json,
    free_port,
    manage,
    postgres_server,
    production_env,
    redis_database,
    scratch_database,
)
from tests.support.oidc_provider.server import ProviderUser, RunningProvider, running_provider
from tests.support.processes import child_pids
from tests.support.redis_db import flushes_redis
from tests.support.reverse_proxy import Proxy, nginx_binary, running_nginx
from tests.support.settings_variables import variables_read
from tests.support.unavailable import unavailable

pytestmark = [
    flushes_redis(REDIS_TEST_DB),
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.celery_worker,
    pytest.mark.browser,
    pytest.mark.slow,
    pytest.mark.timeout(1200),
]
# From the script's start: migrate and five processes importing Django (minutes on a busy
# two-core machine).
READY_TIMEOUT = 600
PROCESSES = ("worker-default", "worker-jury", "worker-planning", "beat", "web")
STUDY_ID = (
    "import json; from annotation.demo import DEMO_STUDY_NAME; "
    "from annotation.models import RatingStudy; "
    "print(json.dumps(RatingStudy.objects.get(name=DEMO_STUDY_NAME).pk))"
)
PROVIDER_NAME = "Test Hospital ID"
PROVIDER_PASSWORD = "provider-password-5120"
# The provider's users carry the e-mails of demo accounts (annotation.demo: <username>@demo.invalid).
CLINICIAN = "clinician2"
SSO_CLINICIAN = ProviderUser("dr.two", "Clinician2@demo.invalid", PROVIDER_PASSWORD, True)
SSO_UNVERIFIED = ProviderUser("dr.three", "clinician3@demo.invalid", PROVIDER_PASSWORD, False)
# The default LOGIN_FAILURE_LIMIT (the layout sets none), as the settings and the README give it.
LOGIN_FAILURE_LIMIT = variables_read()["LOGIN_FAILURE_LIMIT"].production


# nginx's certificate is self-signed, for 127.0.0.1 only.
LOOPBACK_TLS = ssl._create_unverified_context()


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    """Status, headers and body; redirects are not followed."""
    request = urllib.request.Request(url, headers=headers or {})
    opener = urllib.request.build_opener(
        urllib.request.HTTPSHandler(context=LOOPBACK_TLS), NoRedirect()
    )
    try:
        with opener.open(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


@dataclass
class Layout:
    """run-production.sh running, the demo loaded; `stop` sends SIGTERM and waits."""

    base: str
    env: dict[str, str]
    data: Path
    log: Path
    script: subprocess.Popen
    ready: dict = field(default_factory=dict)
    pids: dict[str, int] = field(default_factory=dict)
    logins: dict[str, str] = field(default_factory=dict)
    study: int = 0

    def stop(self) -> int:
        if self.script.poll() is None:
            os.kill(self.script.pid, signal.SIGTERM)
            try:
                self.script.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(self.script.pid, signal.SIGKILL)
                self.script.wait()
                raise
        return self.script.returncode

    def output(self) -> str:
        return self.log.read_text()

    def site(self) -> day_one.Site:
        return day_one.Site(self.base, self.env, self.study, self.logins, PROVIDER_NAME)


def wait_until_ready(base: str, script: subprocess.Popen, log: Path) -> dict:
    """/readyz's body once it answers 200 with both workers seen; fails showing the log."""
    deadline, last = time.monotonic() + READY_TIMEOUT, "no answer"
    while time.monotonic() < deadline:
        if script.poll() is not None:
            pytest.fail(f"run-production.sh exited with {script.returncode}:\n{log.read_text()}")
        try:
            status, _, body = get(base + "/readyz")
            last = f"{status} {body.decode()}"
            answer = json.loads(body)
            if status == 200 and answer["checks"]["workers"]["seen"] >= 2:
                return answer
        except OSError as error:
            last = type(error).__name__
        time.sleep(1)
    pytest.fail(f"/readyz not ready after {READY_TIMEOUT} s: {last}\n{log.read_text()[-6000:]}")


@dataclass(frozen=True)
class Plan:
    """Where the layout will run, decided before anything starts (the provider needs the
    site's address for its redirect URIs): gunicorn's address, the data folder, and the
    address the browser uses, nginx's when nginx is installed."""

    folder: Path
    data: Path
    bind: str
    base: str
    proxy: Proxy | None


@pytest.fixture(scope="module")
def plan(tmp_path_factory) -> Iterator[Plan]:
    folder = tmp_path_factory.mktemp("production")
    data, bind = folder / "data", f"127.0.0.1:{free_port()}"
    if nginx_binary() is None:
        yield Plan(folder, data, bind, f"http://{bind}", None)
        return
    with running_nginx(folder=folder / "nginx", upstream=bind, static_root=data / "static") as px:
        yield Plan(folder, data, bind, px.url, px)


@pytest.fixture(scope="module")
def provider(plan, tmp_path_factory) -> Iterator[RunningProvider]:
    """The hospital's OpenID provider, with the layout registered as its client."""
    with running_provider(
        workdir=tmp_path_factory.mktemp("oidc-provider"),
        redirect_uris=[plan.base + "/accounts/sso/callback/"],
        post_logout_redirect_uris=[plan.base + "/accounts/login/?logged_out=1"],
        users=[SSO_CLINICIAN, SSO_UNVERIFIED],
    ) as running:
        yield running


def layout_env(plan: Plan, provider: RunningProvider, database_url: str, redis_url: str) -> dict:
    """The production environment; behind nginx exactly as docs/deployment.md says (TLS at
    the proxy, the TLS settings left at their production defaults), else plain HTTP."""
    env = production_env(database_url=database_url, data_dir=plan.data, broker_url=redis_url)
    if plan.proxy is not None:
        for name in ("SECURE_SSL_REDIRECT", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE"):
            del env[name]
        env.update(USE_X_FORWARDED_PROTO="1", LOGIN_PROXY_COUNT="1")
    env.update(
        BIND=plan.bind,
        READY_TIMEOUT_SECONDS=str(READY_TIMEOUT),
        # single sign-on, as the README's table names it
        MEDHELM_OIDC_CLIENT_ID=provider.client_id,
        MEDHELM_OIDC_CLIENT_SECRET=provider.client_secret,
        MEDHELM_OIDC_ISSUER=provider.issuer,
        MEDHELM_OIDC_PROVIDER_NAME=PROVIDER_NAME,
    )
    return env


@pytest.fixture(scope="module")
def layout(plan, provider) -> Iterator[Layout]:
    server = postgres_server()
    with scratch_database(server, "deploy") as database_url, redis_database() as redis_url:
        env = layout_env(plan, provider, database_url, redis_url)
        log = plan.folder / "run-production.log"
        with log.open("w") as out:
            script = subprocess.Popen(
                ["bash", str(DEPLOY / "run-production.sh")],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        running = Layout(base=plan.base, env=env, data=plan.data, log=log, script=script)
        try:
            running.ready = wait_until_ready(f"http://{plan.bind}", script, log)
            running.pids = {
                name: int((plan.data / "run" / f"{name}.pid").read_text()) for name in PROCESSES
            }
            manage(env, "load_demo")
            running.logins = json.loads((plan.data / "demo-logins.json").read_text())
            running.study = int(django_json(env, STUDY_ID))
            yield running
        finally:
            running.stop()


def test_ready_with_database_broker_and_both_workers(layout):
    ready = layout.ready
    assert {name: ready["checks"][name]["ok"] for name in ready["checks"]} == {
        "database": True,
        "broker": True,
        "workers": True,
    }
    assert ready["checks"]["workers"]["via"] == "ping"
    assert len(child_pids(layout.pids["web"])) == 2  # gunicorn's two web workers
    status, _, body = get(layout.base + "/healthz")
    assert (status, json.loads(body)) == (200, {"status": "ok"})


def walk(browser, base: str, logins: dict[str, str], study: int, shots: Path) -> list[str]:
    """A coordinator's and a clinician's pages in Chromium; every response under 400 and
    every stylesheet and script loaded. The URLs of the static files the pages loaded."""
    statics: list[str] = []
    failures: list[str] = []
    site = SimpleNamespace(url=base)
    for username, paths in (
        ("coordinator", ["/", f"/studies/{study}/", f"/studies/{study}/agreement/"]),
        ("clinician1", ["/", f"/studies/{study}/queue/", f"/studies/{study}/rate/"]),
    ):
        context = browser.new_context(ignore_https_errors=True)
        page = context.new_page()
        page.set_default_timeout(20_000)

        def on_response(response) -> None:
            if response.status >= 400:
                failures.append(f"{response.status} {response.url}")
            elif "/static/" in response.url:
                statics.append(response.url)

        page.on("response", on_response)
        page.on("requestfailed", lambda r: failures.append(f"failed {r.url}"))
        log_in(page, site, username, password=logins[username])
        for path in paths:
            page.goto(base + path)
            page.wait_for_load_state("load")
            assert "/accounts/login/" not in page.url, f"{username} was sent to log in at {path}"
            name = path.strip("/").replace("/", "-") or "home"
            page.screenshot(path=str(shots / f"{username}-{name}.png"), full_page=True)
        context.close()
    assert failures == []
    return statics


def test_pages_and_hashed_static_files(layout, tmp_path):
    shots = tmp_path / "screenshots"
    shots.mkdir()
    statics = day_one.in_chromium(
        lambda browser: walk(browser, layout.base, layout.logins, layout.study, shots)
    )
    # the collected, hashed and compressed files (whitenoise, or nginx in front), cached for good
    css = next(url for url in statics if url.endswith(".css"))
    assert css.rsplit("/", 1)[1].count(".") >= 2  # the manifest's hashed name
    status, headers, body = get(css, {"Accept-Encoding": "gzip"})
    assert status == 200 and body
    assert headers.get("Content-Encoding") == "gzip"
    assert "immutable" in headers.get("Cache-Control", "")
    assert get(layout.base + "/static/no-such-file.css")[0] == 404


def test_a_clinician_signs_in_through_the_provider_rates_and_logs_out(layout):
    kept = day_one.in_chromium(
        lambda browser: day_one.clinician_signs_in_rates_and_logs_out(
            browser,
            layout.site(),
            provider_login=(SSO_CLINICIAN.username, SSO_CLINICIAN.password),
            account=CLINICIAN,
        )
    )
    assert kept["status"] == "submitted"
    # the sign-in is audited, naming the provider and the e-mail it vouched for
    sso = django_json(
        layout.env,
        "import json; from annotation.models import AuditEvent; print(json.dumps(list("
        "AuditEvent.objects.filter(action='account.sso_login').values_list('after', flat=True))))",
    )
    assert sso == [{"provider": PROVIDER_NAME, "email": SSO_CLINICIAN.email, "created": False}]


def test_an_unverified_email_is_refused(layout):
    message = day_one.in_chromium(
        lambda browser: day_one.unverified_email_is_refused(
            browser,
            layout.site(),
            provider_login=(SSO_UNVERIFIED.username, SSO_UNVERIFIED.password),
            email=SSO_UNVERIFIED.email,
        )
    )
    assert SSO_UNVERIFIED.email in message


def test_a_coordinator_opens_the_pages_and_the_workers_compute_a_report(layout):
    stored = day_one.in_chromium(
        lambda browser: day_one.coordinator_pages_and_a_report(
            browser, layout.site(), account="coordinator", rater=CLINICIAN
        )
    )
    assert stored["status"] == "finished"
    # computed by a worker of the layout (its task line), not inside the web request
    entries = [json.loads(line) for line in layout.output().splitlines() if line.startswith("{")]
    assert any(
        e["logger"] == "celery.app.trace"
        and "agreement.compute_report" in e["message"]
        and "succeeded" in e["message"]
        for e in entries
    ), layout.output()[-4000:]
    status, _, body = get(layout.base + "/readyz")
    checks = json.loads(body)["checks"]
    assert status == 200 and checks["workers"]["seen"] >= 2, body


def test_wrong_passwords_lock_the_account_out(layout):
    message = day_one.in_chromium(
        lambda browser: day_one.wrong_passwords_lock_out(
            browser, layout.site(), account="researcher", limit=LOGIN_FAILURE_LIMIT
        )
    )
    assert "unlocks at" in message


def test_nginx_in_front_as_documented(layout, plan):
    """docs/deploy/nginx.conf in front of gunicorn (the walks above went through it): TLS
    ends there, the site's own security headers come through, cookies are Secure (the
    forwarded scheme is trusted), /static/ comes from the folder collectstatic filled."""
    if plan.proxy is None:
        unavailable(
            "nginx is not installed (apt-get install nginx-light): the walks went to "
            "gunicorn directly over plain HTTP and docs/deploy/nginx.conf is untested"
        )
    status, headers, _ = get(layout.base + "/accounts/login/")
    assert status == 200
    assert "default-src 'self'" in headers["Content-Security-Policy"]
    assert "max-age=" in headers["Strict-Transport-Security"]
    assert "Secure" in headers["Set-Cookie"]  # the CSRF cookie, over HTTPS only
    # the documented plain-HTTP server sends browsers to HTTPS
    status, headers, _ = get(plan.proxy.http_url + "/accounts/login/")
    assert status == 301 and headers["Location"].startswith("https://"), (status, headers)
    # static files from disk by nginx itself, gzip variant included
    static = sorted((layout.data / "static").rglob("*.css"))
    hashed = next(
        p for p in static if p.name.count(".") >= 2 and p.with_name(p.name + ".gz").exists()
    )
    url = f"{layout.base}/static/{hashed.relative_to(layout.data / 'static')}"
    status, headers, body = get(url, {"Accept-Encoding": "gzip"})
    assert status == 200 and headers.get("Content-Encoding") == "gzip"
    assert body == hashed.with_name(hashed.name + ".gz").read_bytes()
    assert "immutable" in headers["Cache-Control"]
    access = plan.proxy.access_log.read_text()
    # the single sign-on came through nginx, which logged no authorization code or state
    assert " /accounts/sso/callback/ " in access
    assert "code=" not in access and "state=" not in access and "?" not in access


def test_sigterm_stops_every_process_and_the_logs_are_json(layout):
    """Last in the module: it stops the layout."""
    code = layout.stop()
    output = layout.output()
    assert code == 0, output[-6000:]
    assert "== stopped" in output
    for name, pid in layout.pids.items():
        assert not Path(f"/proc/{pid}").exists(), f"{name} (pid {pid}) still runs"
    assert not list((layout.data / "run").glob("*.pid"))
    # JSON logs: web and workers alike, a line per request, none holding a password
    entries = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
    requests = [e for e in entries if e["logger"] == "medhelm.request"]
    assert any(r["path"] == "/accounts/login/" and r["method"] == "POST" for r in requests)
    assert any(e["logger"].startswith("celery.worker") for e in entries), output[-3000:]
    assert any(e["logger"].startswith("celery.beat") for e in entries), output[-3000:]
    for password in layout.logins.values():
        assert password not in output
    assert PROVIDER_PASSWORD not in output
    assert layout.env["SECRET_KEY"] not in output
    assert layout.env["MEDHELM_OIDC_CLIENT_SECRET"] not in output
