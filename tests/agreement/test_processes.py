"""Other processes for a report's work (agreement.processes): tasks run in processes of their
own and give back their results or their errors, with one process they run in the caller, and
a Celery worker's process (billiard's, daemonic) may start them too."""

from __future__ import annotations

import multiprocessing
import os
from functools import partial

import billiard.process
import pytest

from agreement import processes


def test_tasks_run_in_other_processes_and_give_back_results_and_errors() -> None:
    with processes.processes(2) as submit:
        pids = [submit(os.getpid) for _ in range(4)]
        broken = submit(partial(int, "row bench-03"))
        assert {f.result() for f in pids} - {os.getpid()} == {f.result() for f in pids}
        with pytest.raises(ValueError, match="bench-03"):
            broken.result()


def test_with_one_process_tasks_run_in_the_caller() -> None:
    with processes.processes(1) as submit:
        assert submit(os.getpid).result() == os.getpid()
        with pytest.raises(ValueError, match="bench-03"):
            submit(partial(int, "row bench-03")).result()


def test_the_count_is_the_asked_one_or_the_cores() -> None:
    assert processes.process_count(1) == 1 and processes.process_count(3) == 3
    for unset in (None, 0):
        assert 1 <= processes.process_count(unset) <= processes.MAX_PROCESSES


def test_a_celery_workers_daemonic_process_may_start_them(monkeypatch) -> None:
    # what billiard does in each of a Celery worker's processes: its own process object,
    # daemonic, as multiprocessing's current process
    worker = billiard.process.BaseProcess(name="ForkPoolWorker-1")
    worker._config["daemon"] = True
    monkeypatch.setattr(multiprocessing.process, "_current_process", worker)
    with pytest.raises(AssertionError, match="daemonic"):  # what multiprocessing alone says
        multiprocessing.get_context("forkserver").Process(target=os.getpid).start()
    processes.start_fork_server(2)
    with processes.processes(2) as submit:
        assert submit(os.getpid).result() != os.getpid()
    assert multiprocessing.process.current_process() is worker  # given back afterwards
