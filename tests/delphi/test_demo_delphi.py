"""The Delphi demo: the demo clinicians as a panel, round 1 fed back, round 2 open."""

from __future__ import annotations

import pytest

from annotation.demo import load_demo
from delphi.demo import CONTESTED, DEMO_DELPHI_TITLE, load_demo_delphi
from delphi.models import DelphiStudy, PanelistRound, Round, RoundItemStatistics

pytestmark = pytest.mark.django_db


def test_demo_study_has_round_two_open_with_round_one_feedback():
    load_demo()
    study = load_demo_delphi()
    assert study is not None and study.status == DelphiStudy.Status.RUNNING
    first, second = study.rounds.order_by("number")
    assert first.status == Round.Status.FEEDBACK_RELEASED
    assert second.status == Round.Status.OPEN
    # Drop-resolved carry-over: round 2 holds what round 1 left unresolved, plus the renamed item.
    unresolved = set(
        RoundItemStatistics.objects.filter(round_item__round=first, group="")
        .exclude(outcome__in=["consensus_in", "consensus_out"])
        .values_list("round_item__identity", flat=True)
    )
    carried = set(second.items.values_list("identity", flat=True))
    assert unresolved and unresolved <= carried
    renamed = second.items.get(name="Documenting Procedures")
    assert (
        renamed.item_version == 2 and "Renamed from 'Recording Procedures'" in renamed.change_note
    )
    assert set(second.items.values_list("name", flat=True)) & set(CONTESTED)
    assert (
        second.panelist_rounds.filter(status=PanelistRound.Status.INVITED).count()
        == study.panelists.count()
        == 4
    )


def test_loading_twice_adds_nothing():
    load_demo()
    load_demo_delphi()
    load_demo_delphi()
    assert DelphiStudy.objects.filter(title=DEMO_DELPHI_TITLE).count() == 1


def test_without_the_demo_accounts_it_does_nothing():
    assert load_demo_delphi() is None
    assert not DelphiStudy.objects.exists()
