"""Waiting on and finding processes (Linux /proc); no Django, so the benchmarks use it too."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path


def wait_for(predicate: Callable[[], object], timeout: float, what: str) -> None:
    """Poll `predicate` every 0.2 s; fail naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def child_pids(pid: int) -> list[int]:
    """The child processes of `pid`: a worker's or a server's pool."""
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []
