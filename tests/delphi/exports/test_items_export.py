"""items.csv: each identity through the rounds, with its final status."""

from __future__ import annotations

import pytest

from delphi import services, stats
from tests.delphi.exports.scenarios import R2, num, read_csv
from tests.delphi.flow import BASE_URL, make_panel_study


@pytest.mark.django_db
def test_items_table_follows_each_identity_through_the_rounds(scenario):
    rows = {r["r1_name"] or r["r2_name"]: r for r in read_csv(scenario.study, "items.csv")}
    assert len(rows) == 8  # 7 draft nodes + 1 added by suggestion
    billing = rows["Billing"]
    assert (billing["r2_name"], billing["r1_version"], billing["r2_version"]) == (
        "Billing and coding",
        "1",
        "2",
    )
    assert billing["status_path"] == "no_consensus > consensus_in"
    assert billing["final_status"] == "consensus_in"
    assert billing["in_released_taxonomy"] == "true"
    # Billing round 1: five ratings (one unable to rate), 3 of 5 in 7-9.
    assert billing["r1_n_rated"] == "5"
    assert num(billing["r1_pct_7_9"]) == pytest.approx(60.0)
    assert num(billing["r1_median"]) == 7.0
    treatment = rows["Treatment"]
    assert treatment["status_path"] == "no_consensus > consensus_in"
    expected = stats.item_statistics(R2["Treatment"], n_invited=5)
    assert num(treatment["r2_median"]) == expected.median
    assert num(treatment["r2_iqr"]) == pytest.approx(expected.iqr)
    assert num(treatment["r2_pct_1_3"]) == 0.0
    scheduling = rows["Scheduling"]
    assert scheduling["status_path"] == "no_consensus > no_consensus"
    assert scheduling["final_status"] == "no_consensus"
    assert scheduling["in_released_taxonomy"] == "false"
    coding = rows["Coding"]
    assert coding["final_status"] == "removed"
    assert "deleted" in coding["final_reason"] and "Duplicate of billing" in coding["final_reason"]
    assert coding["r2_name"] == ""
    # Resolved in round 1 and not rated again (carry-over "drop resolved").
    assert rows["Diagnosis"]["status_path"] == "consensus_in"
    assert rows["Diagnosis"]["last_round"] == "1"
    triage = rows[""] if "" in rows else next(r for r in rows.values() if r["r2_name"] == "Triage")
    assert triage["first_round"] == "2" and triage["status_path"] == "consensus_in"


@pytest.mark.django_db
def test_items_in_an_open_round_show_as_pending(db):
    built = make_panel_study(n_panelists=3)
    services.open_round(round_=built.round(1), actor=built.coordinator, base_url=BASE_URL)
    rows = read_csv(built.study, "items.csv")
    assert {r["status_path"] for r in rows} == {"pending"}
    assert {r["final_status"] for r in rows} == {"not analysed yet"}
