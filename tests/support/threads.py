"""Threads in tests, with nothing lost: every runner here joins its threads, raises the first
exception any of them raised (instead of letting it vanish with the thread), fails naming
the threads that did not end in time, and closes each thread's own database connections.

- run_in_threads: one thread per task, released together; their results in task order.
- run_at_once: the same callable in n threads, released together.
- drain_in_threads: n threads taking items from a shared list until it is empty (workers).
- in_background: a thread running beside the test's own steps, joined when the block ends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, TypeVar

from django.db import connections

T = TypeVar("T")
X = TypeVar("X")


class Threads:
    """Threads started at once, one per task; `join` gives their results in task order."""

    def __init__(self, tasks: Sequence[Callable[[], Any]], *, together: bool = True) -> None:
        self._results: list[Any] = [None] * len(tasks)
        self._errors: list[BaseException] = []
        self._lock = threading.Lock()
        start = threading.Barrier(len(tasks)) if together and tasks else None

        def run(index: int, task: Callable[[], Any]) -> None:
            try:
                if start is not None:
                    start.wait(timeout=60)
                self._results[index] = task()
            except BaseException as exc:
                with self._lock:
                    self._errors.append(exc)
            finally:
                connections.close_all()  # this thread's own connections

        self._threads = [
            threading.Thread(target=run, args=(i, task), name=f"test-thread-{i}")
            for i, task in enumerate(tasks)
        ]
        for thread in self._threads:
            thread.start()

    def join(self, timeout: float = 60.0) -> list[Any]:
        """Wait up to `timeout` s for each thread; their results, or the first exception."""
        for thread in self._threads:
            thread.join(timeout)
        if self._errors:
            raise self._errors[0]
        stuck = [thread.name for thread in self._threads if thread.is_alive()]
        assert not stuck, f"threads {stuck} did not end within {timeout} s"
        return self._results


def run_in_threads(
    tasks: Sequence[Callable[[], T]], *, together: bool = True, timeout: float = 60.0
) -> list[T]:
    """Each task in a thread of its own (released together); their results in task order."""
    return Threads(tasks, together=together).join(timeout)


def run_at_once(work: Callable[[], T], *, threads: int, timeout: float = 60.0) -> list[T]:
    """`work()` in `threads` threads released together; their results."""
    return run_in_threads([work] * threads, timeout=timeout)


def drain_in_threads(
    items: Sequence[X], handle: Callable[[X], object], *, threads: int, first_first: bool = True
) -> Threads:
    """`threads` workers taking items (first first, else last first) until none is left,
    started now; `join()` them."""
    queue = list(items)
    lock = threading.Lock()

    def worker() -> None:
        while True:
            with lock:
                if not queue:
                    return
                item = queue.pop(0 if first_first else -1)
            handle(item)

    return Threads([worker] * threads, together=False)


@contextmanager
def in_background(work: Callable[[], object], *, timeout: float = 60.0) -> Iterator[Threads]:
    """`work()` in a thread beside the block; joined (and its exception raised) at its end."""
    thread = Threads([work], together=False)
    yield thread
    thread.join(timeout)
