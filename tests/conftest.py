"""Fixtures for every test package: a small study with members."""

from __future__ import annotations

import pytest


@pytest.fixture
def study_with_members(db):
    # Imported here so that the pure-statistics tests can run without Django (-p no:django).
    from tests.factories import make_study_with_members

    return make_study_with_members()


def pytest_sessionfinish(session, exitstatus):
    """Remove this session's embedded broker and result files (medhelm_site.test_settings)."""
    import os

    from django.conf import settings

    if not settings.configured:
        return
    for name in (f"celery-broker-{os.getpid()}.sqlite3", f"celery-results-{os.getpid()}.sqlite3"):
        (settings.DATA_DIR / name).unlink(missing_ok=True)
