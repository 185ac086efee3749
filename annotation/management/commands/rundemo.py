"""Start the whole site on embedded defaults: migrate, load the demo, run web + Celery workers.

Ctrl-C stops every process cleanly.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Run the demo: web server and Celery workers on the embedded defaults, with demo data."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", default=os.environ.get("PORT", "8000"))
        parser.add_argument("--no-worker", action="store_true", help="Start the web server only.")

    def handle(self, *args, host: str, port: str, no_worker: bool, **options) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        for loader in settings.MEDHELM_DEMO_LOADERS:
            call_command(loader)
        children = _start(host=host, port=port, worker=not no_worker)
        self.stdout.write(
            self.style.SUCCESS(f"\nmedhelm-studio is starting at http://{host}:{port}/")
        )
        self.stdout.write(f"Database: {settings.DATABASES['default']['NAME']}")
        self.stdout.write(f"Celery broker: {settings.CELERY_BROKER_URL}")
        if not no_worker:
            for name, worker in settings.MEDHELM_DEMO_WORKERS.items():
                queues = ", ".join(worker["queues"])
                self.stdout.write(f"Worker {name}: {worker['concurrency']} process(es) on {queues}")
        self.stdout.write("Press Ctrl-C to stop the web server and the workers.\n")
        stopped_by_signal = _wait_for_signal_or_exit(children)
        _stop(children)
        failed = [
            c.args[:4] for c in children if c.returncode not in (0, -signal.SIGTERM, -signal.SIGINT)
        ]
        if failed and not stopped_by_signal:
            self.stderr.write(f"A process stopped unexpectedly: {failed}")
            sys.exit(1)
        self.stdout.write("Stopped.")


def _start(*, host: str, port: str, worker: bool) -> list[subprocess.Popen]:
    """The Celery workers (unless left out) and the development web server."""
    children: list[subprocess.Popen] = []
    python = sys.executable
    if worker:
        children += [subprocess.Popen(command) for command in worker_commands(python)]
    children.append(
        subprocess.Popen(
            [python, "manage.py", "runserver", f"{host}:{port}", "--noreload"],
            cwd=settings.BASE_DIR,
        )
    )
    return children


def worker_commands(python: str) -> list[list[str]]:
    """One `celery worker` command per worker of settings.MEDHELM_DEMO_WORKERS, each on its
    own queues (the judge calls apart from the metrics); the one marked "beat" runs beat."""
    return [
        [
            *(python, "-m", "celery", "-A", "medhelm_site", "worker", "--loglevel", "INFO"),
            *("--concurrency", str(worker["concurrency"])),
            *("--queues", ",".join(worker["queues"])),
            *("--hostname", f"{name}@%h"),
            # Celery beat (the jury's sweep) runs inside exactly one worker.
            *(("--beat",) if worker.get("beat") else ()),
        ]
        for name, worker in settings.MEDHELM_DEMO_WORKERS.items()
    ]


def _wait_for_signal_or_exit(children: list[subprocess.Popen]) -> bool:
    """Wait for Ctrl-C (or SIGTERM) or for a child to exit; True when a signal came."""
    stopping = False

    def stop(*_args) -> None:
        nonlocal stopping
        stopping = True

    signal.signal(signal.SIGINT, stop)
    signal.signal(signal.SIGTERM, stop)
    while not stopping and all(c.poll() is None for c in children):
        time.sleep(0.3)
    return stopping


def _stop(children: list[subprocess.Popen], *, grace_seconds: float = 15) -> None:
    """SIGTERM every child still running; kill those not gone within the grace period."""
    for child in children:
        if child.poll() is None:
            child.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace_seconds
    for child in children:
        try:
            child.wait(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            child.kill()
