"""A PostgreSQL cluster of a test's own (initdb + pg_ctl on a free port, in a temporary
directory), so that a test may restart it without disturbing the shared server. initdb
refuses to run as root: as root, the cluster belongs to the `postgres` OS user."""

from __future__ import annotations

import contextlib
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

PG_BIN = Path("/usr/lib/postgresql/15/bin")


def missing_binaries() -> str | None:
    """Why a private cluster cannot run here, or None."""
    for name in ("initdb", "pg_ctl"):
        if not (PG_BIN / name).exists():
            return f"{PG_BIN / name} not installed"
    if os.geteuid() == 0 and shutil.which("runuser") is None:
        return "running as root and runuser is missing (initdb refuses root)"
    return None


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrivateCluster:
    def __init__(self, root: Path, port: int) -> None:
        self.root, self.port = root, port
        self.data = root / "data"
        self.log = root / "server.log"

    def url(self, database: str) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, *args: str, timeout: float = 60) -> None:
        prefix = ["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []
        done = subprocess.run(
            [*prefix, *args], capture_output=True, text=True, timeout=timeout, check=False
        )
        if done.returncode:
            raise RuntimeError(f"{' '.join(args)} failed:\n{done.stdout}\n{done.stderr}")

    def _pg_ctl(self, action: str, *extra: str) -> None:
        options = f"-p {self.port} -k {self.root} -c listen_addresses=127.0.0.1 -c fsync=off"
        self._run(
            str(PG_BIN / "pg_ctl"),
            action,
            "-D",
            str(self.data),
            "-l",
            str(self.log),
            "-o",
            options,
            "-w",
            *extra,
        )

    def start(self) -> None:
        self._pg_ctl("start")

    def stop(self) -> None:
        self._pg_ctl("stop", "-m", "fast")

    def restart(self) -> None:
        """`pg_ctl restart -m fast`: every session cut, the server back once it accepts them."""
        self._pg_ctl("restart", "-m", "fast")

    def create_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.url("postgres"), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')


@contextlib.contextmanager
def private_cluster() -> Iterator[PrivateCluster]:
    root = Path(tempfile.mkdtemp(prefix="pg_private_"))
    if os.geteuid() == 0:
        shutil.chown(root, "postgres", "postgres")
    cluster = PrivateCluster(root, free_port())
    try:
        cluster._run(
            str(PG_BIN / "initdb"),
            "-D",
            str(cluster.data),
            "-U",
            "postgres",
            "-A",
            "trust",
            "--no-sync",
        )
        cluster.start()
        yield cluster
    finally:
        with contextlib.suppress(Exception):
            cluster.stop()
        shutil.rmtree(root, ignore_errors=True)
