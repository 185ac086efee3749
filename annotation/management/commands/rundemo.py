"""Start the whole site on embedded defaults: migrate, load the demo, run web + Celery worker.

Ctrl-C stops both processes cleanly.
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
    help = "Run the demo: web server and Celery worker on the embedded defaults, with demo data."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
        parser.add_argument("--port", default=os.environ.get("PORT", "8000"))
        parser.add_argument("--no-worker", action="store_true", help="Start the web server only.")

    def handle(self, *args, host: str, port: str, no_worker: bool, **options) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        for loader in settings.MEDHELM_DEMO_LOADERS:
            call_command(loader)
        children: list[subprocess.Popen] = []
        python = sys.executable
        if not no_worker:
            children.append(
                subprocess.Popen(
                    [
                        python,
                        "-m",
                        "celery",
                        "-A",
                        "medhelm_site",
                        "worker",
                        "--loglevel",
                        "INFO",
                        "--concurrency",
                        "2",
                        "--hostname",
                        "demo@%h",
                    ]
                )
            )
        children.append(
            subprocess.Popen(
                [python, "manage.py", "runserver", f"{host}:{port}", "--noreload"],
                cwd=settings.BASE_DIR,
            )
        )
        self.stdout.write(
            self.style.SUCCESS(f"\nmedhelm-studio is starting at http://{host}:{port}/")
        )
        self.stdout.write(f"Database: {settings.DATABASES['default']['NAME']}")
        self.stdout.write(f"Celery broker: {settings.CELERY_BROKER_URL}")
        self.stdout.write("Press Ctrl-C to stop the web server and the worker.\n")

        stopping = False

        def stop(*_args) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        while not stopping and all(c.poll() is None for c in children):
            time.sleep(0.3)
        for child in children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + 15
        for child in children:
            try:
                child.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
        failed = [
            c.args[:4] for c in children if c.returncode not in (0, -signal.SIGTERM, -signal.SIGINT)
        ]
        if failed and not stopping:
            self.stderr.write(f"A process stopped unexpectedly: {failed}")
            sys.exit(1)
        self.stdout.write("Stopped.")
