"""The fake provider's process, seen from the bench: start, configure, read counters, stop."""

from __future__ import annotations

import json
import signal
import subprocess
import urllib.request
from pathlib import Path
from typing import Any

from _support import PYTHON, ROOT

from jurybench.config import ENTRY


class FakeServer:
    """The fake provider's process, and its /bench/ routes from this side."""

    def __init__(self, latency: float, log_path: Path) -> None:
        self.log = open(log_path, "w")  # noqa: SIM115 - closed in stop()
        self.proc = subprocess.Popen(
            [PYTHON, ENTRY, "--internal", "server", json.dumps({"latency": latency, "seed": 0})],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=self.log,
            text=True,
            start_new_session=True,
        )
        line = self.proc.stdout.readline() if self.proc.stdout else ""
        if not line.startswith("URL "):
            self.stop()
            raise SystemExit(f"the fake provider did not start: {line!r}")
        self.url = line.split()[1]

    def _post(self, path: str, data: dict[str, Any]) -> None:
        req = urllib.request.Request(self.url + path, data=json.dumps(data).encode(), method="POST")
        req.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(req, timeout=30) as r:
            r.read()

    def configure(self, **config: Any) -> None:
        self._post("/bench/config", config)

    def reset(self) -> None:
        self._post("/bench/reset", {})

    def stats(self) -> dict[str, Any]:
        with urllib.request.urlopen(self.url + "/bench/stats", timeout=60) as r:
            return json.loads(r.read())

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
