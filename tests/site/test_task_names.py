"""Every Celery task name is written once, in medhelm_site.common.task_names: the settings
(routes, the beat schedule, the steps after an import) and the apps (@shared_task, send_task)
import it. A name spelled out anywhere else drifts: a task renamed in one place is sent,
routed or scheduled under the old name, and nothing answers."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

from django.conf import settings

from medhelm_site.celery import app

ROOT = Path(__file__).resolve().parents[2]
APPS = ("delphi", "annotation", "jury", "agreement")
PACKAGES = (*APPS, "medhelm_site")
NAMES_MODULE = ROOT / "medhelm_site" / "common" / "task_names.py"


def registered() -> set[str]:
    """The project's tasks the Celery app registers (every app's tasks module imported)."""
    app.loader.import_default_modules()
    return {name for name in app.tasks if name.startswith(tuple(f"{a}." for a in APPS))}


def named() -> set[str]:
    from medhelm_site.common import task_names

    return {
        value for key, value in vars(task_names).items() if key.isupper() and isinstance(value, str)
    }


def test_the_names_module_imports_neither_django_nor_an_app():
    code = (
        "import sys, medhelm_site.common.task_names; "
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & {set(PACKAGES) | {'django', 'celery'}}))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "['medhelm_site']"


def test_every_registered_task_is_named_there_and_every_name_is_registered():
    tasks = registered()
    assert {"jury.execute_judge_call", "agreement.compute_report"} <= tasks  # the walk works
    assert named() == tasks


def test_every_route_beat_entry_and_step_names_a_registered_task():
    tasks = registered()
    assert set(settings.CELERY_TASK_ROUTES) <= tasks
    assert {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()} <= tasks
    assert set(settings.MEDHELM_AFTER_IMPORT_TASKS) <= tasks


def spelled_out(names: set[str]) -> list[str]:
    """Each string literal of the site's code (migrations aside) equal to one of `names`,
    outside the names module, as "path:line name"."""
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts or path == NAMES_MODULE:
                continue
            for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
                if isinstance(node, ast.Constant) and node.value in names:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.value}")
    return found


def test_no_task_name_is_spelled_out_outside_the_names_module():
    assert spelled_out(registered()) == []


def test_a_spelled_out_name_is_found():
    # the guard itself: the walk sees a literal in the settings (the default queue's name)
    assert any(f.startswith("medhelm_site/settings/workers.py:") for f in spelled_out({"celery"}))
