"""Fixtures of the panel-page tests."""

from __future__ import annotations

import pytest

from delphi import services
from tests.delphi.flow import BASE_URL, PanelStudy, make_panel_study


@pytest.fixture
def built(db) -> PanelStudy:
    """Six joined panelists, round 1 open; re-rate all, reasons asked outside the IQR."""
    study = make_panel_study(n_panelists=6, carry_over="rerate_all", ask_reason_outside_iqr=True)
    services.open_round(round_=study.round(1), actor=study.coordinator, base_url=BASE_URL)
    return study
