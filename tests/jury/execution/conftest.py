"""Fixtures of the chunk tests: the limits in Redis (so chunks run on the engine), the fake
judges' key, and a small study."""

from __future__ import annotations

import pytest

from tests.factories import make_study_with_members


@pytest.fixture
def chunk_limits(redis_limits, monkeypatch) -> str:
    monkeypatch.setenv("MEDHELM_JUDGE_KEY_FAKE", "sk-test-not-a-secret")
    return redis_limits


@pytest.fixture
def study(db):
    return make_study_with_members(n_items=4, n_clinicians=2, k=2).study
