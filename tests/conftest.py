"""Fixtures for every test package: a small study with members."""

from __future__ import annotations

import pytest


@pytest.fixture
def study_with_members(db):
    # Imported here so that the pure-statistics tests can run without Django (-p no:django).
    from tests.factories import make_study_with_members

    return make_study_with_members()


#: Tests that need neither a database nor a broker: the pure statistics, and the import guard
#: (each module imported alone in a fresh interpreter, about 100 s).
STACK_FREE = ("tests/agreement/stats/", "tests/site/test_modules_import_alone.py")


def pytest_collection_modifyitems(config, items):
    """These tests carry the `pure` mark, so that CI's second stack, which repeats the tests
    that face the database or the broker, can leave them out: they would give the same result
    on PostgreSQL and Redis."""
    for item in items:
        if item.nodeid.replace("\\", "/").startswith(STACK_FREE):
            item.add_marker(pytest.mark.pure)


def pytest_sessionfinish(session, exitstatus):
    """Remove this session's embedded broker and result files (medhelm_site.test_settings)."""
    import os

    from django.conf import settings

    if not settings.configured:
        return
    for name in (f"celery-broker-{os.getpid()}.sqlite3", f"celery-results-{os.getpid()}.sqlite3"):
        (settings.DATA_DIR / name).unlink(missing_ok=True)
