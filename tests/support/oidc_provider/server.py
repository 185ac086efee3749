"""Start the test OpenID provider (this package's Django site) as a real HTTP server process
(gunicorn) on a free port, with its own SQLite database, one client and some users."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from tests.support.processes import wait_for

ROOT = Path(__file__).resolve().parents[3]
SETTINGS = "tests.support.oidc_provider.settings"


@dataclass(frozen=True)
class ProviderUser:
    username: str
    email: str
    password: str
    email_verified: bool


@dataclass(frozen=True)
class RunningProvider:
    url: str  # the site's root, e.g. http://127.0.0.1:PORT
    issuer: str  # url + "/openid", as its discovery document says
    client_id: str
    client_secret: str
    log_path: Path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@contextlib.contextmanager
def running_provider(
    *,
    workdir: Path,
    redirect_uris: Sequence[str],
    users: Sequence[ProviderUser],
    post_logout_redirect_uris: Sequence[str] = (),
    client_id: str = "medhelm-test-client",
    client_secret: str = "medhelm-test-client-secret",
) -> Iterator[RunningProvider]:
    """The provider, serving until the block ends; its log in workdir/provider.log."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": SETTINGS,
        "OIDC_TEST_PROVIDER_URL": url,
        "OIDC_TEST_PROVIDER_DB": str(workdir / "provider.sqlite3"),
        "PYTHONPATH": str(ROOT),
    }
    env.pop("DATABASE_URL", None)
    spec = {
        "client": {
            "name": "medhelm-studio",
            "id": client_id,
            "secret": client_secret,
            "redirect_uris": list(redirect_uris),
            "post_logout_redirect_uris": list(post_logout_redirect_uris),
        },
        "users": [u.__dict__ for u in users],
    }
    spec_path = workdir / "provider-spec.json"
    spec_path.write_text(json.dumps(spec))
    log_path = workdir / "provider.log"
    with open(log_path, "wb") as log:
        for command in (
            [sys.executable, "-m", "django", "migrate", "--noinput", "-v", "0"],
            [sys.executable, "-m", "tests.support.oidc_provider.populate", str(spec_path)],
        ):
            subprocess.run(
                command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, check=True
            )
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "gunicorn",
                "--bind",
                f"127.0.0.1:{port}",
                "--workers",
                "1",
                "--threads",
                "4",
                "tests.support.oidc_provider.wsgi:application",
            ],
            cwd=ROOT,
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        try:
            issuer = url + "/openid"
            wait_for(
                lambda: (
                    process.poll() is None
                    and _answers(issuer + "/.well-known/openid-configuration")
                ),
                timeout=60,
                what=f"the test OpenID provider at {url} (log: {log_path})",
            )
            yield RunningProvider(
                url=url,
                issuer=issuer,
                client_id=client_id,
                client_secret=client_secret,
                log_path=log_path,
            )
        finally:
            process.terminate()
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
