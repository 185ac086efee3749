"""flow.csv: invited, submitted, response rate and attrition per round and group."""

from __future__ import annotations

import pytest

from tests.delphi.exports.scenarios import num, read_csv


@pytest.mark.django_db
def test_flow_counts_response_rate_and_attrition_per_round_and_group(scenario):
    rows = {(int(r["round"]), r["group"]): r for r in read_csv(scenario.study, "flow.csv")}
    assert set(rows) == {(n, g) for n in (1, 2) for g in ("all", "clinician", "patient")}
    first = rows[(1, "all")]
    assert (first["invited"], first["submitted"], first["non_responders"]) == ("6", "6", "0")
    assert num(first["response_rate_pct"]) == 100.0
    assert num(first["attrition_vs_round_1_pct"]) == 0.0
    second = rows[(2, "all")]
    assert (second["invited"], second["submitted"]) == ("6", "4")
    assert (second["non_responders"], second["withdrawn"], second["pending"]) == ("1", "1", "0")
    assert num(second["response_rate_pct"]) == pytest.approx(100 * 4 / 6)
    assert num(second["attrition_vs_round_1_pct"]) == pytest.approx(100 * 2 / 6)
    # Panelist 4 (clinician) did not respond; panelist 5 (patient) withdrew.
    clinician, patient = rows[(2, "clinician")], rows[(2, "patient")]
    assert (clinician["submitted"], clinician["non_responders"], clinician["withdrawn"]) == (
        "2",
        "1",
        "0",
    )
    assert (patient["submitted"], patient["non_responders"], patient["withdrawn"]) == (
        "2",
        "0",
        "1",
    )
    assert num(patient["attrition_vs_round_1_pct"]) == pytest.approx(100 / 3)
