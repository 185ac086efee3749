"""comments.csv and raw.csv: counted answers only, anonymous, free text apart."""

from __future__ import annotations

import csv
import io

import pytest

from delphi.exports.answer_tables import COMMENT_COLUMNS
from delphi.exports.registry import render_export
from tests.delphi.exports.scenarios import DRAFT_SECRET, GROUPS, R1, read_csv


@pytest.mark.django_db
def test_comments_are_anonymous_sorted_and_only_submitted(scenario):
    content = render_export(study=scenario.study, name="comments.csv")[0].decode()
    rows = list(csv.DictReader(io.StringIO(content)))
    assert list(rows[0]) == COMMENT_COLUMNS
    texts = [(r["round"], r["item"], r["text"]) for r in rows]
    assert texts == [
        ("1", "Treatment", "'=Too broad as worded"),  # a formula-like cell is defused
        ("1", "Treatment", "Keep it"),
        ("2", "Scheduling", "Alpha comment"),
        ("2", "Scheduling", "Zebra comment"),
    ]
    assert DRAFT_SECRET not in content
    for panelist in scenario.built.panelists:
        assert panelist.pseudonym not in content


@pytest.mark.django_db
def test_raw_data_is_long_format_of_counted_answers_only(scenario):
    rows = read_csv(scenario.study, "raw.csv")
    items = [r for r in rows if r["record"] == "item"]
    # Round 1: 6 panelists x 7 items; round 2: 4 submitters x 4 items (no draft of P05).
    assert len([r for r in items if r["round"] == "1"]) == 42
    assert len([r for r in items if r["round"] == "2"]) == 16
    p = scenario.built.panelists
    treatment_r1 = {
        r["panelist"]: r for r in items if r["round"] == "1" and r["item"] == "Treatment"
    }
    assert {k: int(v["rating"]) for k, v in treatment_r1.items()} == {
        p[i].pseudonym: R1["Treatment"][i] for i in range(6)
    }
    unable = next(r for r in items if r["item"] == "Billing" and r["panelist"] == p[5].pseudonym)
    assert (unable["rating"], unable["unable_to_rate"]) == ("", "true")
    billing_r2 = next(r for r in items if r["round"] == "2" and r["item"] == "Billing and coding")
    assert billing_r2["item_version"] == "2"
    assert billing_r2["stakeholder_group"] in GROUPS
    assert p[4].pseudonym not in {r["panelist"] for r in rows if r["round"] == "2"}
    comprehensiveness = {
        (r["round"], r["panelist"]): r["comprehensiveness"]
        for r in rows
        if r["record"] == "comprehensiveness"
    }
    assert comprehensiveness[("1", p[5].pseudonym)] == "2"
    assert len([k for k in comprehensiveness if k[0] == "2"]) == 4
    assert "comment" not in ",".join(rows[0])  # free text is not in raw data
