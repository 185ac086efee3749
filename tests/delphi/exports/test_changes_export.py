"""changes.csv (and items.csv for what a change removed): every change with its reason."""

from __future__ import annotations

import pytest

from tests.delphi.exports.scenarios import read_csv


@pytest.mark.django_db
def test_changes_list_every_suggestion_with_its_reason_and_no_author(scenario):
    rows = read_csv(scenario.study, "changes.csv")
    by_kind = {(r["kind"], r["decision"]): r for r in rows}
    assert len(rows) == 4, rows  # the rename explains Billing's new version: no extra row
    rename = by_kind[("rename", "accepted")]
    assert (rename["from"], rename["to"], rename["reason"]) == (
        "Billing",
        "Billing and coding",
        "Clearer scope",
    )
    assert rename["applies_from_round"] == "2"
    assert by_kind[("delete", "accepted")]["item"] == "Coding"
    rejected = by_kind[("delete", "rejected")]
    assert (rejected["item"], rejected["reason"]) == (
        "Scheduling",
        "Scheduling is in the MedHELM scope",
    )
    assert rejected["applies_from_round"] == ""
    add = by_kind[("add", "accepted")]
    triage = scenario.r2.items.get(name="Triage")
    assert add["identity"] == str(triage.identity)
    assert add["to"] == "Triage (under Clinical Decision Support)"
    assert add["panelist_rationale"] == "Triage is missing"
    assert not any(
        p.pseudonym in ",".join(r.values()) for r in rows for p in scenario.built.panelists
    )


@pytest.mark.django_db
def test_a_new_version_no_suggestion_explains_is_a_reword_with_its_change_note(scenario):
    # A coordinator edit made outside the suggestions (as a later feature may): the export
    # still reports it, with the change note as the reason.
    item = scenario.r2.items.get(name="Scheduling")
    item.name, item.item_version, item.change_note = "Appointment scheduling", 2, "Clearer"
    item.save()
    rows = [r for r in read_csv(scenario.study, "changes.csv") if r["kind"] == "reword"]
    assert len(rows) == 1
    assert (rows[0]["from"], rows[0]["to"], rows[0]["reason"]) == (
        "Scheduling",
        "Appointment scheduling",
        "Clearer",
    )


@pytest.mark.django_db
def test_a_merge_moves_the_children_of_the_merged_item(branch_study):
    changes = read_csv(branch_study.study, "changes.csv")
    moved = [c for c in changes if c["kind"] == "move"]
    assert len(moved) == 1, changes
    assert (moved[0]["item"], moved[0]["from"], moved[0]["to"]) == (
        "T2",
        "under Sub 2",
        "under Sub 1",
    )
    assert "merged into it (Overlap)" in moved[0]["reason"]
    assert moved[0]["source"] == "item version 1 -> 2"
    merged = next(c for c in changes if c["kind"] == "merge")
    assert (merged["from"], merged["to"], merged["reason"]) == (
        "Sub 2",
        "merged into Sub 1",
        "Overlap",
    )


@pytest.mark.django_db
def test_a_merged_item_and_a_deleted_branch_are_removed_in_the_items_table(branch_study):
    rows = {r["r1_name"]: r for r in read_csv(branch_study.study, "items.csv")}
    assert rows["Sub 2"]["final_status"] == "removed"
    assert "merged into 'Sub 1'" in rows["Sub 2"]["final_reason"]
    assert rows["T2"]["r2_version"] == "2" and rows["T2"]["final_status"] == "no_consensus"
    for name in ("Cat B", "Sub 3", "T3"):  # the whole branch goes with its category
        assert rows[name]["final_status"] == "removed", name
        assert rows[name]["r2_name"] == ""
    assert "'Cat B', above it, was deleted" in rows["T3"]["final_reason"]
