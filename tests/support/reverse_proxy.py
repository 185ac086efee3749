"""nginx in front of gunicorn as docs/deploy/nginx.conf configures it, for the deployment
tests: the documented server blocks with only the machine-specific parts replaced (ports on
loopback, a self-signed certificate for 127.0.0.1, the static folder, gunicorn's address),
inside a minimal main configuration of its own (its pid file, logs and temporary folders in a
scratch folder). `nginx -t` must accept the result, so a config the installed nginx cannot
load fails the test rather than a hospital's deployment. Like Debian's, that main
configuration has an access log of its own in nginx's default format (`default-access.log`):
the documented server blocks must log to theirs (`access.log`) instead.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from tests.support.deploy import DEPLOY, free_port
from tests.support.processes import wait_for

DOCUMENTED = DEPLOY / "nginx.conf"


def nginx_binary() -> str | None:
    """The installed nginx, or None."""
    return shutil.which("nginx") or next(
        (p for p in ("/usr/sbin/nginx", "/usr/local/sbin/nginx") if Path(p).exists()), None
    )


@dataclass(frozen=True)
class Proxy:
    url: str  # https://127.0.0.1:PORT, TLS ending at nginx
    http_url: str  # the documented plain-HTTP server, redirecting to HTTPS
    folder: Path  # its configuration and logs

    @property
    def access_log(self) -> Path:
        """The documented servers' access log."""
        return self.folder / "access.log"

    @property
    def default_access_log(self) -> Path:
        """The main configuration's access log, which the documented servers replace."""
        return self.folder / "default-access.log"


def _replace(text: str, old: str, new: str, times: int = 1) -> str:
    count = text.count(old)
    if count != times:
        raise AssertionError(f"{DOCUMENTED}: expected {old!r} {times} times, found it {count}")
    return text.replace(old, new)


def site_config(
    *,
    https_port: int,
    http_port: int,
    upstream: str,
    static_root: Path,
    cert: Path,
    key: Path,
    access_log: Path,
) -> str:
    """docs/deploy/nginx.conf with this machine's ports, certificate and folders."""
    text = DOCUMENTED.read_text()
    for old, new in (
        ("listen 80;", f"listen 127.0.0.1:{http_port};"),
        ("listen 443 ssl", f"listen 127.0.0.1:{https_port} ssl"),
        ("/etc/ssl/medhelm/fullchain.pem", str(cert)),
        ("/etc/ssl/medhelm/privkey.pem", str(key)),
        ("/srv/medhelm/static/", f"{static_root}/"),
        ("http://127.0.0.1:8000", f"http://{upstream}"),
    ):
        text = _replace(text, old, new)
    # one in each server block
    return _replace(text, "/var/log/nginx/medhelm.access.log", str(access_log), times=2)


def _main_config(folder: Path, site: Path) -> str:
    temp = "\n".join(
        f"    {kind}_temp_path {folder / kind};"
        for kind in ("client_body", "proxy", "fastcgi", "uwsgi", "scgi")
    )
    return f"""daemon off;
worker_processes 1;
pid {folder / "nginx.pid"};
error_log {folder / "error.log"} warn;
{"user root;" if _is_root() else ""}
events {{ worker_connections 256; }}
http {{
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log {folder / "default-access.log"};
{temp}
    include {site};
}}
"""


def _is_root() -> bool:
    return os.geteuid() == 0  # the workers then read the scratch folders (mode 0700)


def _self_signed(folder: Path) -> tuple[Path, Path]:
    cert, key = folder / "cert.pem", folder / "key.pem"
    command = (
        "openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 "
        f"-addext subjectAltName=IP:127.0.0.1 -keyout {key} -out {cert}"
    )
    subprocess.run(
        command.split(),  # the scratch folder's path has no spaces (pytest's tmp_path)
        check=True,
        capture_output=True,
    )
    return cert, key


def _listening(port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1)
        return sock.connect_ex(("127.0.0.1", port)) == 0


@contextlib.contextmanager
def running_nginx(*, folder: Path, upstream: str, static_root: Path) -> Iterator[Proxy]:
    """nginx serving the documented configuration until the block ends."""
    binary = nginx_binary()
    assert binary, "nginx is not installed"
    folder.mkdir(parents=True, exist_ok=True)
    cert, key = _self_signed(folder)
    https_port, http_port = free_port(), free_port()
    site = folder / "medhelm.conf"
    site.write_text(
        site_config(
            https_port=https_port,
            http_port=http_port,
            upstream=upstream,
            static_root=static_root,
            cert=cert,
            key=key,
            access_log=folder / "access.log",
        )
    )
    main = folder / "nginx.conf"
    main.write_text(_main_config(folder, site))
    checked = subprocess.run(
        [binary, "-t", "-p", str(folder), "-c", str(main)], capture_output=True, text=True
    )
    if checked.returncode != 0:
        raise AssertionError(f"nginx refuses {DOCUMENTED} (as {site}):\n{checked.stderr}")
    log = (folder / "nginx.out").open("wb")
    process = subprocess.Popen(
        [binary, "-p", str(folder), "-c", str(main)], stdout=log, stderr=subprocess.STDOUT
    )
    try:
        wait_for(
            lambda: process.poll() is None and _listening(https_port),
            timeout=30,
            what=f"nginx on 127.0.0.1:{https_port} (log: {folder / 'error.log'})",
        )
        yield Proxy(
            url=f"https://127.0.0.1:{https_port}",
            http_url=f"http://127.0.0.1:{http_port}",
            folder=folder,
        )
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGQUIT)  # graceful: finish the open requests
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        log.close()
