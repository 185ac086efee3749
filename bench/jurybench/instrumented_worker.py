"""A Celery worker with timers around the phases of a call, every SQL statement counted and
timed by kind, and cProfile with --cprofile; its figures are written out at shutdown for
bench_jury's report. The jury patch points themselves are in jurybench/patches.py."""

from __future__ import annotations

import os
import re
import time
from pathlib import Path
from typing import Any

from _support import django_setup

from jurybench.recorder import Recorder

TABLE = re.compile(r'(?:FROM|INTO|UPDATE)\s+"([a-z_]+)"')


def run_instrumented_worker(celery_args: list[str]) -> None:
    """`celery worker *celery_args` in this process, instrumented (BENCH_INSTRUMENT_OUT names
    the output file; BENCH_CPROFILE=1 adds cProfile)."""
    django_setup()
    from celery.signals import worker_shutdown

    from jurybench.patches import install_worker_patches

    out = Path(os.environ["BENCH_INSTRUMENT_OUT"])
    rec = Recorder(use_cprofile=os.environ.get("BENCH_CPROFILE") == "1")
    time_sql(rec)
    install_worker_patches(rec)
    worker_shutdown.connect(lambda **kw: rec.dump(out), weak=False)
    from medhelm_site.celery import app

    if rec.use_cprofile:
        # The main thread too: Celery's consumer (messages, acks) runs there.
        rec.new_profile(rec.main_profiles).enable()
    app.worker_main(["worker", *celery_args])


def sql_label(text: str) -> str:
    """A statement's kind: verb and table, FOR UPDATE, count or exists."""
    verb = text.lstrip().split(None, 1)[0].upper()
    m = TABLE.search(text)
    label = f"{verb} {m.group(1) if m else ''}".strip()
    if "FOR UPDATE" in text:
        label += " FOR UPDATE"
    if "COUNT(" in text.upper():
        label += " count"
    elif verb == "SELECT" and re.match(r'\s*SELECT (?:1|%s) AS "a" ', text):
        label += " exists"
    return label


def time_sql(rec: Recorder) -> None:
    """Every statement of every connection, and every COMMIT, counted and timed."""
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.db.backends.signals import connection_created

    def sql_wrapper(execute, text, params, many, context):
        t0 = time.perf_counter()
        try:
            return execute(text, params, many, context)
        finally:
            rec.add_sql(sql_label(text), time.perf_counter() - t0)

    def on_connect(sender, connection, **kw: Any) -> None:
        if sql_wrapper not in connection.execute_wrappers:
            connection.execute_wrappers.append(sql_wrapper)

    connection_created.connect(on_connect, weak=False)
    original_commit = BaseDatabaseWrapper.commit

    def commit(self):
        t0 = time.perf_counter()
        try:
            return original_commit(self)
        finally:
            rec.add_sql("COMMIT", time.perf_counter() - t0)

    BaseDatabaseWrapper.commit = commit
