"""Other processes for a report's work: its rows' cells (agreement.analysis.row_workers) and its
figure files (agreement.services.renderings) computed beside each other on the machine's cores.

Processes, not threads: most of that work is numpy, matplotlib or WeasyPrint, and enough of it
holds the GIL that two threads on two cores did 1.3 to 1.5 times the work of one
(bench/README.md, issue 32). They are forked from a fork server (``multiprocessing``'s
"forkserver" start method) that has imported the analysis and the figures once, so a pool
starts in milliseconds and holds no thread, lock or database connection of the process asking
(a Celery worker, a web worker, a test). Nothing here imports Django: a task is a
module-level function with its arguments, pickled, and gives plain data back.

A caller that runs its module as a script must guard it (``if __name__ == "__main__":``), as
every entry point of the site does (manage.py, celery, gunicorn, pytest): the fork server
imports the caller's main module once, as ``multiprocessing`` always does."""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from contextlib import contextmanager
from multiprocessing.context import BaseContext
from typing import TypeVar

from threadpoolctl import threadpool_limits

T = TypeVar("T")

#: At most this many processes for one report (a row holds its resample chunks' shared work,
#: a few hundred MB at 3,000 items).
MAX_PROCESSES = 4

#: What the fork server imports once, so that every process forked from it has it already.
PRELOAD = ["agreement.analysis", "agreement.plots"]


def process_count(asked: int | None = None) -> int:
    """``asked`` where it is a positive number (1: everything in the asking process), else the
    cores this process may run on, at most :data:`MAX_PROCESSES` (the site passes its setting
    AGREEMENT_REPORT_PROCESSES, 0 when unset)."""
    if asked is not None and asked > 0:
        return asked
    return max(1, min(MAX_PROCESSES, len(os.sched_getaffinity(0))))


def _context() -> BaseContext:
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(PRELOAD)
    return context


def start_fork_server(asked: int | None = None) -> None:
    """Start the fork server now, where :func:`processes` ``(asked)`` will use one, and return
    at once: it imports :data:`PRELOAD` (about 2 s) while the caller goes on (a report job
    reads its scores meanwhile). Once started it serves every later pool of this process."""
    if process_count(asked) > 1:
        _context()
        multiprocessing.forkserver.ensure_running()


def _one_blas_thread() -> None:
    # the processes are the parallelism: a BLAS thread per process besides would oversubscribe
    # the cores (and a second BLAS thread on small matrices costs far more than it gives)
    threadpool_limits(limits=1, user_api="blas")


@contextmanager
def _as_parent() -> Iterator[None]:
    """Let the pool's processes be started from a Celery worker's process: billiard (Celery's
    pool) makes its own process object ``multiprocessing``'s current process, a daemonic one
    with an authentication key ``multiprocessing`` cannot pass on, so ``multiprocessing``
    refuses it children (they would outlive it). Within the block ``multiprocessing`` sees a
    main process of its own instead. The pool's processes do not outlive the caller: they are
    forked by the fork server, and the server and they end when the process that started
    them does (each reads a pipe from it)."""
    mp_process = multiprocessing.process
    current = mp_process.current_process()
    if isinstance(current, mp_process.BaseProcess) and not current.daemon:
        yield  # the usual case: multiprocessing's own main process
        return
    mp_process._current_process = _MainProcess()
    try:
        yield
    finally:
        mp_process._current_process = current


class _MainProcess(multiprocessing.process.BaseProcess):
    """What ``multiprocessing`` makes of a process it did not start (its own _MainProcess, which
    it does not export): no parent, a fresh authentication key."""

    def __init__(self) -> None:
        self._identity = ()
        self._name = "MainProcess"
        self._parent_pid = None
        self._popen = None
        self._closed = False
        self._config = {
            "authkey": multiprocessing.process.AuthenticationString(os.urandom(32)),
            "semprefix": "/mp",
        }


def _now(task: Callable[[], T]) -> Future:
    done: Future = Future()
    try:
        done.set_result(task())
    except Exception as exc:  # raised by result(), as a process's error would be
        done.set_exception(exc)
    return done


@contextmanager
def processes(asked: int | None = None) -> Iterator[Callable[[Callable[[], T]], Future]]:
    """Within the block, ``submit(task)`` runs ``task()`` on one of :func:`process_count`
    ``(asked)`` processes and gives its future; with one, the task runs at once, in the caller.
    BLAS is held to one thread in the caller meanwhile too. At the block's end the pool waits
    for its tasks and stops: nothing is left running between reports."""
    n = process_count(asked)
    if n <= 1:
        yield _now
        return
    with (
        threadpool_limits(limits=1, user_api="blas"),
        _as_parent(),
        ProcessPoolExecutor(n, mp_context=_context(), initializer=_one_blas_thread) as pool,
    ):
        yield pool.submit
