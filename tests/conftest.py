"""Fixtures for every test package: a small study with members."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture
def study_with_members(db):
    # Imported here so that the pure-statistics tests can run without Django (-p no:django).
    from tests.factories import make_study_with_members

    return make_study_with_members()


#: Tests that need neither a database nor a broker: the pure statistics, and the import guard
#: (each module imported alone in a fresh interpreter). CI runs them once, on its second
#: stack (the `pure` mark), which ends well before the defaults.
STACK_FREE = ("tests/agreement/stats/", "tests/site/test_modules_import_alone.py")


#: Tests of what is computed and rendered from stored ratings (the agreement analysis and its
#: reports, figures and exports, the planning page, the page access matrix, the Delphi
#: exports): they read the database through plain queries whose results do not depend on the
#: engine, and most of their time goes to statistics and typesetting. CI's second stack
#: leaves them out (the `rendered` mark); what the reports store and how their jobs run
#: (snapshots, background jobs, the study archive, the watch) stays on both stacks.
RENDERED = (
    "tests/agreement/",
    "tests/common/",
    "tests/delphi/exports/",
    "tests/site/test_access.py",
    "tests/site/test_figures_draw_hostile_names.py",
)
RENDERED_BUT_STORED = (
    "tests/agreement/reports/test_snapshots.py",
    "tests/agreement/reports/test_background_jobs.py",
    "tests/agreement/test_study_archive.py",
    "tests/agreement/test_long_round_trip.py",
    "tests/agreement/test_watch_refresh.py",
)


#: Each module's seconds in a full run (bench/suite_durations.py --save): the parallel run
#: starts the longest units first, so that no long module is left alone at the end.
MODULE_SECONDS = Path(__file__).with_name("module_seconds.json")


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Marks by folder for CI, which runs on both stacks the tests whose result the stack can
    change, and the others once: `pure` (neither a database nor a broker) on the second
    stack, `rendered` (above) on the defaults.

    And the units of work of the parallel run (`make test`: pytest-xdist, `--dist loadgroup`):
    a module, so that a module's shared set-up (a computed report, a started server, a loaded
    model) is made once, in one process; a module that flushes a fixed Redis database names
    its group itself (tests/support/redis_db.py), so that the modules sharing that database
    run one after the other. The units are ordered longest first (MODULE_SECONDS). Runs
    first, before xdist reads the groups."""
    for item in items:
        path = item.nodeid.replace("\\", "/")
        if path.startswith(STACK_FREE):
            item.add_marker(pytest.mark.pure)
        elif path.startswith(RENDERED) and not path.startswith(RENDERED_BUT_STORED):
            item.add_marker(pytest.mark.rendered)
        if item.get_closest_marker("xdist_group") is None:
            item.add_marker(pytest.mark.xdist_group(path.split("::")[0]))
    if config.pluginmanager.hasplugin("xdist") and getattr(config.option, "numprocesses", None):
        items[:] = longest_units_first(items)


def longest_units_first(items: list[pytest.Item]) -> list[pytest.Item]:
    """The items grouped by unit of work, the units by their modules' recorded seconds
    (longest first; units of unrecorded modules last, in collection order)."""
    seconds = json.loads(MODULE_SECONDS.read_text()) if MODULE_SECONDS.exists() else {}
    units: dict[str, list[pytest.Item]] = {}
    modules: dict[str, set[str]] = {}
    for item in items:
        unit = item.get_closest_marker("xdist_group").args[0]
        units.setdefault(unit, []).append(item)
        modules.setdefault(unit, set()).add(item.nodeid.split("::")[0])
    weight = {unit: sum(seconds.get(m, 0.0) for m in ms) for unit, ms in modules.items()}
    ordered = sorted(units, key=lambda unit: -weight[unit])  # stable: ties keep their order
    return [item for unit in ordered for item in units[unit]]


def pytest_sessionfinish(session, exitstatus):
    """Remove this session's embedded broker and result files (medhelm_site.test_settings)."""
    import os

    from django.conf import settings

    if not settings.configured:
        return
    for name in (f"celery-broker-{os.getpid()}.sqlite3", f"celery-results-{os.getpid()}.sqlite3"):
        (settings.DATA_DIR / name).unlink(missing_ok=True)
