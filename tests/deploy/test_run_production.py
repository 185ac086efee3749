"""docs/deploy/run-production.sh brings up the documented production layout on one machine
(PostgreSQL, Redis, gunicorn with two web workers, two Celery workers and beat, DEBUG off)
and this test uses it as a clinician and a coordinator would: /readyz answers 200 with both
workers seen, Chromium logs in and opens pages through gunicorn, whitenoise serves the
collected static files, the logs are JSON, and SIGTERM stops every process cleanly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.support.browser import log_in
from tests.support.deploy import (
    DEPLOY,
    django_json,
    free_port,
    manage,
    postgres_server,
    production_env,
    redis_database,
    scratch_database,
)
from tests.support.processes import child_pids

pytestmark = [
    pytest.mark.postgres,
    pytest.mark.redis,
    pytest.mark.celery_worker,
    pytest.mark.browser,
    pytest.mark.slow,
]
# From the script's start: migrate and five processes importing Django (minutes on a busy
# two-core machine).
READY_TIMEOUT = 600
PROCESSES = ("worker-default", "worker-jury", "beat", "web")
STUDY_ID = (
    "import json; from annotation.demo import DEMO_STUDY_NAME; "
    "from annotation.models import RatingStudy; "
    "print(json.dumps(RatingStudy.objects.get(name=DEMO_STUDY_NAME).pk))"
)


def get(url: str, headers: dict[str, str] | None = None) -> tuple[int, dict[str, str], bytes]:
    request = urllib.request.Request(url, headers=headers or {})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, dict(response.headers), response.read()
    except urllib.error.HTTPError as error:
        return error.code, dict(error.headers), error.read()


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
        context = browser.new_context()
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


@pytest.mark.timeout(1200)
def walk_in_a_thread_of_its_own(
    base: str, logins: dict[str, str], study: int, shots: Path
) -> list[str]:
    """`walk` with Chromium driven from a thread of its own: an earlier test of the session
    (the jury's asyncio engine) can leave an event loop running in the main thread, inside
    which Playwright's sync API refuses to start (the shared browser fixture is made late in a
    run that skips the other browser tests)."""
    from playwright.sync_api import sync_playwright

    from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS

    done: dict[str, object] = {}

    def run() -> None:
        try:
            with sync_playwright() as p:
                chromium = p.chromium.launch(
                    executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
                )
                try:
                    done["statics"] = walk(chromium, base, logins, study, shots)
                finally:
                    chromium.close()
        except BaseException as exc:  # raised again in the test's thread below
            done["error"] = exc

    thread = threading.Thread(target=run, name="chromium-walk")
    thread.start()
    thread.join()
    if "error" in done:
        raise done["error"]  # type: ignore[misc]
    return done["statics"]  # type: ignore[return-value]


def test_production_layout_comes_up_serves_pages_and_stops_cleanly(tmp_path):
    server = postgres_server()
    with scratch_database(server, "deploy") as database_url, redis_database() as redis_url:
        data = tmp_path / "data"
        env = production_env(database_url=database_url, data_dir=data, broker_url=redis_url)
        base = f"http://127.0.0.1:{free_port()}"
        env["BIND"] = base.removeprefix("http://")
        env["READY_TIMEOUT_SECONDS"] = str(READY_TIMEOUT)
        log = tmp_path / "run-production.log"
        with log.open("w") as out:
            script = subprocess.Popen(
                ["bash", str(DEPLOY / "run-production.sh")],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        try:
            ready = wait_until_ready(base, script, log)
            assert {name: ready["checks"][name]["ok"] for name in ready["checks"]} == {
                "database": True,
                "broker": True,
                "workers": True,
            }
            assert ready["checks"]["workers"]["via"] == "ping"
            pids = {name: int((data / "run" / f"{name}.pid").read_text()) for name in PROCESSES}
            assert len(child_pids(pids["web"])) == 2  # gunicorn's two web workers

            manage(env, "load_demo")
            logins = json.loads((data / "demo-logins.json").read_text())
            study = int(django_json(env, STUDY_ID))
            shots = tmp_path / "screenshots"
            shots.mkdir()
            statics = walk_in_a_thread_of_its_own(base, logins, study, shots)

            # whitenoise serves the collected, hashed and compressed files, cached for good
            css = next(url for url in statics if url.endswith(".css"))
            assert ".css" in css and css.count(".") >= 2  # the manifest's hashed name
            status, headers, body = get(css, {"Accept-Encoding": "gzip"})
            assert status == 200 and body
            assert headers.get("Content-Encoding") == "gzip"
            assert "immutable" in headers.get("Cache-Control", "")
            assert get(base + "/static/no-such-file.css")[0] == 404
        finally:
            os.kill(script.pid, signal.SIGTERM)
            try:
                code = script.wait(timeout=90)
            except subprocess.TimeoutExpired:
                os.killpg(script.pid, signal.SIGKILL)
                raise
        output = log.read_text()
        assert code == 0, output[-6000:]
        assert "== stopped" in output
        for name, pid in pids.items():
            assert not Path(f"/proc/{pid}").exists(), f"{name} (pid {pid}) still runs"
        assert not list((data / "run").glob("*.pid"))
        # JSON logs: web and workers alike, a line per request, none holding a password
        entries = [json.loads(line) for line in output.splitlines() if line.startswith("{")]
        requests = [e for e in entries if e["logger"] == "medhelm.request"]
        assert any(r["path"] == "/accounts/login/" and r["method"] == "POST" for r in requests)
        assert any(e["logger"].startswith("celery.worker") for e in entries), output[-3000:]
        assert any(e["logger"].startswith("celery.beat") for e in entries), output[-3000:]
        for password in logins.values():
            assert password not in output
        assert env["SECRET_KEY"] not in output
