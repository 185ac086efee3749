"""Fixtures shared by the annotation tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def setup(study_with_members):
    """The small study of tests/conftest.py (6 items, 3 clinicians, k=2, assigned)."""
    return study_with_members
