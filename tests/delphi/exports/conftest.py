"""Fixtures of the Delphi export and report tests: the studies of scenarios.py."""

from __future__ import annotations

import pytest

from tests.delphi.exports.scenarios import (
    Scenario,
    build_branch_study,
    build_large_group_study,
    build_two_round_study,
)
from tests.delphi.flow import PanelStudy


@pytest.fixture
def scenario(db) -> Scenario:
    return build_two_round_study()


@pytest.fixture
def large_group_study(db) -> PanelStudy:
    return build_large_group_study()


@pytest.fixture
def branch_study(db) -> PanelStudy:
    return build_branch_study()
