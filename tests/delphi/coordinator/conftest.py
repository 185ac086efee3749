"""Fixtures of the coordinator-page tests."""

from __future__ import annotations

import pytest

from tests.delphi.flow import PanelStudy, make_panel_study


@pytest.fixture
def setup_study(db) -> PanelStudy:
    """A study in set-up (protocol not locked) with two joined panelists."""
    return make_panel_study(n_panelists=2, lock=False)
