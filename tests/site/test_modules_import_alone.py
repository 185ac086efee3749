"""Every module of the site imports on its own in a fresh interpreter.

An import cycle hides while the test suite imports modules in a lucky order and shows up
when a command or a worker imports one module first; this test imports each one first.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("medhelm_site", "delphi", "annotation", "jury", "agreement")


def site_modules() -> list[str]:
    names = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in path.parts:
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            names.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return names


def _run(code: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "medhelm_site.test_settings"}
    return subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )


def import_alone(module: str) -> str | None:
    """None if `module` imports first thing in a new interpreter (after django.setup() only
    where it needs the app registry, as a command or a worker would), else the error."""
    done = _run(f"import {module}")
    if done.returncode != 0 and "AppRegistryNotReady" in done.stderr:
        done = _run(f"import django; django.setup(); import {module}")
    if done.returncode == 0:
        return None
    return f"{module}: {done.stderr.strip().splitlines()[-1]}"


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_every_module_imports_first():
    modules = site_modules()
    assert len(modules) > 100  # the walk found the packages
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 2) as pool:
        failures = [f for f in pool.map(import_alone, modules) if f]
    assert failures == []
