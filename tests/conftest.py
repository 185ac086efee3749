"""Fixtures for every test package: a small study with members."""

from __future__ import annotations

import pytest


@pytest.fixture
def study_with_members(db):
    # Imported here so that the pure-statistics tests can run without Django (-p no:django).
    from tests.factories import make_study_with_members

    return make_study_with_members()
