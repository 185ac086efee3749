"""Run a callable in several threads at once and collect what each returned; a thread's
exception fails the caller instead of vanishing with the thread."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from django.db import connections

T = TypeVar("T")


def run_at_once(work: Callable[[], T], *, threads: int, timeout: float = 60.0) -> list[T]:
    """`work()` in `threads` threads released together; their results (in no set order).
    Raises the first exception a thread raised, or AssertionError if one did not finish."""
    start = threading.Barrier(threads)
    results: list[T] = []
    errors: list[BaseException] = []
    lock = threading.Lock()

    def run() -> None:
        try:
            start.wait()
            value = work()
            with lock:
                results.append(value)
        except BaseException as exc:
            with lock:
                errors.append(exc)
        finally:
            connections.close_all()  # this thread's own database connections

    running = [threading.Thread(target=run) for _ in range(threads)]
    for thread in running:
        thread.start()
    for thread in running:
        thread.join(timeout)
    if errors:
        raise errors[0]
    stuck = sum(thread.is_alive() for thread in running)
    assert not stuck, f"{stuck} of {threads} threads did not finish in {timeout} s"
    return results
