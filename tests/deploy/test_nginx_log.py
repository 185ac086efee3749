"""docs/deploy/nginx.conf logs no secret: not the single sign-on callback's authorization code
and state (its query string), not the tokens in a Delphi invitation's or a password reset's
path, not a query string brought along by the Referer; every request is still logged with
its method, path, status and timings.

Read from the file, and, where nginx is installed (`make nginx`), served: nginx runs the
documented server blocks in front of a small upstream, takes such requests over HTTPS and
plain HTTP, and its access logs are read back.
"""

from __future__ import annotations

import http.client
import re
import ssl
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.support.deploy import DEPLOY
from tests.support.reverse_proxy import Proxy, nginx_binary, running_nginx
from tests.support.unavailable import unavailable

CONFIG = DEPLOY / "nginx.conf"
# nginx variables holding a query string or a whole URL: none may reach a log format
WITH_A_QUERY = re.compile(r"\$(request|request_uri|args|query_string|arg_\w+|http_referer)\b")
CODE, STATE = "SplxlOBeZQQYbYS6WxSbIA-code", "af0ifjsldkj-state"
INVITATION = "Zx81kQ-aa_77pp-invitation"
RESET_UID, RESET_TOKEN = "MQ", "c8k2xz-0b1f2e3d4c5b6a79"
SECRETS = (CODE, STATE, INVITATION, RESET_TOKEN, "referer-code-1234")


def _without_comments(text: str) -> str:
    return "\n".join(line.split("#", 1)[0] for line in text.splitlines())


def directives(name: str, text: str) -> list[str]:
    """The arguments of every `name ...;` directive."""
    return re.findall(rf"(?:^|\s){name}\s+([^;]*);", _without_comments(text))


def server_blocks(text: str) -> list[str]:
    """Each `server { ... }` block's text."""
    text, blocks = _without_comments(text), []
    for match in re.finditer(r"^\s*server\s*\{", text, re.MULTILINE):
        depth = 0
        for end in range(match.end() - 1, len(text)):
            depth += {"{": 1, "}": -1}.get(text[end], 0)
            if depth == 0:
                blocks.append(text[match.start() : end + 1])
                break
    return blocks


def test_the_documented_log_format_holds_no_query_string():
    text = CONFIG.read_text()
    formats = {args.split()[0]: args for args in directives("log_format", text)}
    assert set(formats) == {"medhelm"}, formats
    assert not WITH_A_QUERY.search(formats["medhelm"]), formats["medhelm"]
    # the path and referer it logs come from maps that keep no query string
    assert "$medhelm_logged_path" in formats["medhelm"]
    assert "$medhelm_logged_referer" in formats["medhelm"]
    servers = server_blocks(text)
    assert len(servers) == 2
    for server in servers:
        # in each server block, or an access_log of the http level (Debian's default
        # format, with query strings) logs its requests
        logs = directives("access_log", server)
        assert logs and all(log.split()[1:] == ["medhelm"] for log in logs), server


class _Upstream(BaseHTTPRequestHandler):
    """gunicorn's stand-in: answers every request 200."""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args: object) -> None:  # quiet
        pass


@pytest.fixture
def proxy(tmp_path) -> Iterator[Proxy]:
    if nginx_binary() is None:
        unavailable("nginx is not installed (make nginx): docs/deploy/nginx.conf is not served")
    upstream = ThreadingHTTPServer(("127.0.0.1", 0), _Upstream)
    thread = threading.Thread(target=upstream.serve_forever, daemon=True)
    thread.start()
    try:
        address = f"127.0.0.1:{upstream.server_address[1]}"
        with running_nginx(folder=tmp_path / "nginx", upstream=address, static_root=tmp_path) as px:
            yield px
    finally:
        upstream.shutdown()
        upstream.server_close()


def _get(url: str, path: str, headers: dict[str, str] | None = None) -> int:
    scheme, host = url.split("://")
    if scheme == "https":
        connection = http.client.HTTPSConnection(
            host, context=ssl._create_unverified_context(), timeout=30
        )
    else:
        connection = http.client.HTTPConnection(host, timeout=30)
    try:
        connection.request("GET", path, headers=headers or {})
        return connection.getresponse().status
    finally:
        connection.close()


def _log_with(proxy: Proxy, *, requests: int, seconds: float = 5.0) -> str:
    """The access log once it holds ``requests`` lines (nginx writes a request's line after
    its response is sent, so the client can read the log before the last line is there; a
    full CI run once read 5 of 6), or as it is after ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        logged = proxy.access_log.read_text()
        if logged.count("\n") >= requests or time.monotonic() > deadline:
            return logged
        time.sleep(0.05)


def test_nginx_logs_paths_without_their_secrets(proxy):
    callback = f"/accounts/sso/callback/?code={CODE}&state={STATE}&session_state=x"
    invitation = f"/delphi/join/{INVITATION}/"
    reset = f"/accounts/password/reset/{RESET_UID}/{RESET_TOKEN}/"
    referer = "https://127.0.0.1/accounts/sso/callback/?code=referer-code-1234&state=s"
    assert _get(proxy.url, callback) == 200
    assert _get(proxy.url, invitation) == 200
    assert _get(proxy.url, reset) == 200
    assert _get(proxy.url, "/accounts/password/reset/sent/") == 200
    assert _get(proxy.url, "/static/site.css?v=2", {"Referer": referer}) in (200, 404)
    assert _get(proxy.http_url, callback) == 301  # the plain-HTTP server's redirect

    logged = _log_with(proxy, requests=6)
    leaked = [secret for secret in SECRETS if secret in logged]
    assert leaked == [], logged
    requests = re.findall(r'"(GET \S* HTTP/[\d.]+)"', logged)
    assert requests == [
        "GET /accounts/sso/callback/ HTTP/1.1",
        "GET /delphi/join/[redacted]/ HTTP/1.1",
        "GET /accounts/password/reset/[redacted]/ HTTP/1.1",
        "GET /accounts/password/reset/sent/ HTTP/1.1",
        "GET /static/site.css HTTP/1.1",
        "GET /accounts/sso/callback/ HTTP/1.1",
    ], logged
    # still a useful log: status, the referring site, the timings
    assert re.search(r'" 200 \d+ "-" ', logged) and '"https://127.0.0.1"' in logged
    assert " 301 " in logged
    # nothing went to the main configuration's access log, in nginx's default format
    default = proxy.default_access_log
    assert not default.exists() or default.read_text() == ""
