"""Delphi exports: each export's content against values computed here from the answers given,
only counted answers, anonymity, and the protocol hash."""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass
from typing import Any

import pytest

from delphi import exports, services, stats
from delphi.models import DelphiStudy, Round
from tests.delphi.flow import BASE_URL, PanelStudy, answer_all, make_panel_study, run_round

TAXONOMY = {
    "name": "Export draft",
    "categories": [
        {"name": "Clinical Decision Support", "subcategories": ["Diagnosis", "Treatment"]},
        {"name": "Administration", "subcategories": ["Scheduling", "Billing", "Coding"]},
    ],
}
GROUPS = ("clinician", "patient")  # panelist i is in GROUPS[i % 2]: two groups of 3

# Round 1: all six panelists submit.
R1 = {
    "Clinical Decision Support": [8, 8, 8, 8, 9, 9],
    "Diagnosis": [8, 8, 8, 8, 9, 9],
    "Treatment": [2, 5, 8, 5, 5, 8],
    "Administration": [8, 8, 8, 8, 8, 8],
    "Scheduling": [5, 5, 5, 6, 4, 5],
    "Billing": [7, 7, 5, 5, 8, None],  # the last panelist is unable to rate it
    "Coding": [5, 5, 6, 6, 4, 4],
}
# Round 2: panelists 0-3 submit, 4 leaves a draft and never submits, 5 withdraws.
R2 = {
    "Treatment": [8, 8, 7, 8],
    "Scheduling": [5, 5, 4, 5],
    "Billing and coding": [8, 8, 8, 9],
    "Triage": [8, 7, 8, 8],
}
DRAFT_SECRET = "DRAFT-ONLY comment that must never be exported"


@dataclass
class Scenario:
    built: PanelStudy
    study: DelphiStudy
    r1: Round
    r2: Round


def _answers(round_: Round, ratings: dict[str, list[int | None]], i: int, comments: dict[str, str]):
    answers: dict[str, Any] = {}
    for item in round_.items.all():
        value = ratings[item.name][i]
        answer: dict[str, Any] = {"placement_agrees": True}
        answer.update({"unable": True} if value is None else {"rating": value})
        if item.name in comments:
            answer["comment"] = comments[item.name]
        answers[str(item.pk)] = answer
    return answers


def build_two_round_study() -> Scenario:
    """Two rounds through the services: suggestions triaged after round 1 (a rename, an add
    and a delete accepted, a delete rejected), a non-responder and a withdrawal in round 2,
    the study finished early and its taxonomy released."""
    built = make_panel_study(n_panelists=6, groups=GROUPS, taxonomy=TAXONOMY)
    actor = built.coordinator
    p = built.panelists
    r1 = built.round(1)
    services.open_round(round_=r1, actor=actor, base_url=BASE_URL)
    item = {i.name: i for i in r1.items.all()}
    rename = services.add_suggestion(
        panelist=p[0], round_=r1, kind="rename", target_identity=item["Billing"].identity,
        details={"name": "Billing and coding"}, text="Coding belongs with billing",
    )  # fmt: skip
    delete = services.add_suggestion(
        panelist=p[1], round_=r1, kind="delete", target_identity=item["Coding"].identity,
        text="Duplicate of billing",
    )  # fmt: skip
    refused = services.add_suggestion(
        panelist=p[2], round_=r1, kind="delete", target_identity=item["Scheduling"].identity,
        text="Not a clinical task",
    )  # fmt: skip
    add = services.add_suggestion(
        panelist=p[3], round_=r1, kind="add", text="Triage is missing",
        details={"name": "Triage", "kind": "subcategory",
                 "parent_identity": str(item["Clinical Decision Support"].identity)},
    )  # fmt: skip
    comments_r1 = {0: {"Treatment": "=Too broad as worded"}, 3: {"Treatment": "Keep it"}}
    for i, panelist in enumerate(p):
        services.submit_round(
            panelist=panelist, round_=r1, answers=_answers(r1, R1, i, comments_r1.get(i, {})),
            comprehensiveness=[4, 4, 3, 5, 4, 2][i],
        )  # fmt: skip
    services.close_round(round_=r1, actor=actor)
    services.analyse_round(round_=r1, actor=actor)
    for suggestion, accept, reason in (
        (rename, True, "Clearer scope"),
        (delete, True, "Duplicate of billing"),
        (refused, False, "Scheduling is in the MedHELM scope"),
        (add, True, "A common task"),
    ):
        services.triage_suggestion(suggestion=suggestion, actor=actor, accept=accept, reason=reason)
    services.release_feedback(round_=r1, actor=actor)
    r2 = services.start_next_round(study=built.study, actor=actor)
    services.open_round(round_=r2, actor=actor, base_url=BASE_URL)
    comments_r2 = {0: {"Scheduling": "Alpha comment"}, 1: {"Scheduling": "Zebra comment"}}
    for i in range(4):
        services.submit_round(
            panelist=p[i], round_=r2, answers=_answers(r2, R2, i, comments_r2.get(i, {})),
            comprehensiveness=[5, 4, 4, 4][i],
        )  # fmt: skip
    services.save_answers(
        panelist=p[4], round_=r2, answers=_answers(r2, R2, 0, {"Treatment": DRAFT_SECRET})
    )
    services.withdraw_panelist(panelist=p[5], actor=actor, reason="moved abroad")
    services.close_round(round_=r2, actor=actor)
    services.analyse_round(round_=r2, actor=actor)
    services.release_feedback(round_=r2, actor=actor)
    services.finish_study(study=built.study, actor=actor, reason="budget ran out")
    services.release_taxonomy(study=built.study, actor=actor, name="Export consensus v1")
    study = DelphiStudy.objects.get(pk=built.study.pk)
    return Scenario(built=built, study=study, r1=built.round(1), r2=built.round(2))


def build_large_group_study() -> PanelStudy:
    """One analysed round, 10 panelists in two groups of 5: group statistics are shown."""
    built = make_panel_study(n_panelists=10, groups=("nurse", "physician"))
    ratings = {
        "Clinical Decision Support": [8, 9, 8, 9, 8, 7, 8, 9, 8, 9],
        "Diagnosis": [2, 8, 3, 8, 2, 9, 3, 8, 2, 8],  # nurses low, physicians high
    }
    run_round(built, built.round(1), ratings)
    return built


def identifying_strings(built: PanelStudy) -> list[str]:
    """What must never appear in an export: usernames and e-mail addresses."""
    users = [p.user for p in built.panelists] + [built.coordinator]
    return (
        [u.username for u in users] + [u.email for u in users] + [p.email for p in built.panelists]
    )


def read_csv(study: DelphiStudy, name: str) -> list[dict[str, str]]:
    content, content_type, filename = exports.render_export(study=study, name=name)
    assert content_type.startswith("text/csv")
    assert filename == f"delphi-study-{study.pk}-{name}"
    return list(csv.DictReader(io.StringIO(content.decode("utf-8"))))


def num(text: str) -> float | None:
    return float(text) if text != "" else None


@pytest.fixture
def scenario(db) -> Scenario:
    return build_two_round_study()


# --------------------------------------------------------------------------- protocol


@pytest.mark.django_db
def test_protocol_json_is_the_locked_document_with_its_hash(scenario):
    content, content_type, _ = exports.render_export(study=scenario.study, name="protocol.json")
    data = json.loads(content)
    assert content_type == "application/json"
    assert data["protocol_hash"] == scenario.study.protocol_hash
    assert data["hash_matches_document"] is True
    assert data["document"] == scenario.study.protocol_document
    assert data["locked_at"] == scenario.study.protocol_locked_at.isoformat()


@pytest.mark.django_db
def test_protocol_json_refuses_an_unlocked_study():
    built = make_panel_study(n_panelists=2, lock=False)
    with pytest.raises(ValueError, match="not locked"):
        exports.render_export(study=built.study, name="protocol.json")


@pytest.mark.django_db
def test_a_protocol_edited_after_locking_shows_as_not_matching(scenario):
    study = scenario.study
    study.protocol_document = {**study.protocol_document, "title": "edited later"}
    study.save(update_fields=["protocol_document"])
    data = json.loads(exports.render_export(study=study, name="protocol.json")[0])
    assert data["hash_matches_document"] is False


def test_unknown_export_name_is_refused():
    with pytest.raises(ValueError, match="unknown export"):
        exports.render_export(study=DelphiStudy(), name="secrets.csv")


# --------------------------------------------------------------------------- flow


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


# --------------------------------------------------------------------------- items


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


# --------------------------------------------------------------------------- changes


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
def test_a_merge_moves_the_children_and_a_deleted_category_takes_its_branch(db):
    taxonomy = {
        "name": "Branches",
        "categories": [
            {"name": "Cat A", "subcategories": [{"name": "Sub 1", "tasks": ["T1"]},
                                                {"name": "Sub 2", "tasks": ["T2"]}]},
            {"name": "Cat B", "subcategories": [{"name": "Sub 3", "tasks": ["T3"]}]},
        ],
    }  # fmt: skip
    built = make_panel_study(n_panelists=3, taxonomy=taxonomy)
    actor, r1 = built.coordinator, built.round(1)
    services.open_round(round_=r1, actor=actor, base_url=BASE_URL)
    item = {i.name: i for i in r1.items.all()}
    merge = services.add_suggestion(
        panelist=built.panelists[0], round_=r1, kind="merge", text="Same thing",
        target_identity=item["Sub 2"].identity,
        details={"into_identity": str(item["Sub 1"].identity)},
    )  # fmt: skip
    delete = services.add_suggestion(
        panelist=built.panelists[1], round_=r1, kind="delete", text="Out of scope",
        target_identity=item["Cat B"].identity,
    )  # fmt: skip
    answer_all(built, r1, {name: [5, 5, 5] for name in item})  # nothing resolved
    services.close_round(round_=r1, actor=actor)
    services.analyse_round(round_=r1, actor=actor)
    services.triage_suggestion(suggestion=merge, actor=actor, accept=True, reason="Overlap")
    services.triage_suggestion(suggestion=delete, actor=actor, accept=True, reason="Not ours")
    services.release_feedback(round_=r1, actor=actor)
    services.start_next_round(study=built.study, actor=actor)

    changes = read_csv(built.study, "changes.csv")
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

    rows = {r["r1_name"]: r for r in read_csv(built.study, "items.csv")}
    assert rows["Sub 2"]["final_status"] == "removed"
    assert "merged into 'Sub 1'" in rows["Sub 2"]["final_reason"]
    assert rows["T2"]["r2_version"] == "2" and rows["T2"]["final_status"] == "no_consensus"
    for name in ("Cat B", "Sub 3", "T3"):  # the whole branch goes with its category
        assert rows[name]["final_status"] == "removed", name
        assert rows[name]["r2_name"] == ""
    assert "'Cat B', above it, was deleted" in rows["T3"]["final_reason"]


# --------------------------------------------------------------------------- comments


@pytest.mark.django_db
def test_comments_are_anonymous_sorted_and_only_submitted(scenario):
    content = exports.render_export(study=scenario.study, name="comments.csv")[0].decode()
    rows = list(csv.DictReader(io.StringIO(content)))
    assert list(rows[0]) == exports.COMMENT_COLUMNS
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


# --------------------------------------------------------------------------- raw


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


# --------------------------------------------------------------------------- statistics


@pytest.mark.django_db
def test_statistics_has_every_row_with_groups_withheld_and_the_quantile_method(scenario):
    rows = read_csv(scenario.study, "statistics.csv")
    # 7 + 4 items, each for the whole panel and two groups.
    assert len(rows) == (7 + 4) * 3
    assert {r["quantile_method"] for r in rows} == {stats.describe_quantile_method("linear")}
    groups = [r for r in rows if r["group"] != "all"]
    assert {r["group"] for r in groups} == set(GROUPS)
    assert {r["outcome"] for r in groups} == {"withheld"}  # 3 per group < 5
    assert {r["median"] for r in groups} == {""}
    coding = next(r for r in rows if r["item"] == "Coding" and r["group"] == "all")
    expected = stats.item_statistics(R1["Coding"], n_invited=6)
    assert num(coding["q1"]) == pytest.approx(expected.q1)
    assert num(coding["p70"]) == pytest.approx(expected.p70)
    assert coding["count_5"] == "2" and coding["count_9"] == "0"


@pytest.mark.django_db
def test_statistics_show_groups_of_five_or_more():
    built = build_large_group_study()
    rows = read_csv(built.study, "statistics.csv")
    diagnosis = {r["group"]: r for r in rows if r["item"] == "Diagnosis"}
    assert set(diagnosis) == {"all", "nurse", "physician"}
    nurses = [2, 3, 2, 3, 2]  # panelists 0, 2, 4, 6, 8
    assert diagnosis["nurse"]["n_rated"] == "5"
    assert num(diagnosis["nurse"]["median"]) == stats.item_statistics(nurses, n_invited=5).median
    assert diagnosis["nurse"]["outcome"] == "consensus_out"
    assert diagnosis["physician"]["outcome"] == "consensus_in"
    assert diagnosis["all"]["outcome"] == "no_consensus"


# --------------------------------------------------------------------------- stability


@pytest.mark.django_db
def test_stability_pairs_the_same_item_version_in_consecutive_rounds(scenario):
    rows = {r["item"]: r for r in read_csv(scenario.study, "stability.csv")}
    # Billing was renamed (version 2) and Triage is new: neither is paired.
    assert set(rows) == {"Treatment", "Scheduling"}
    for name in ("Treatment", "Scheduling"):
        expected = stats.rating_stability(dict(enumerate(R1[name][:4])), dict(enumerate(R2[name])))
        row = rows[name]
        assert (row["round_from"], row["round_to"]) == ("1", "2")
        assert int(row["n_paired"]) == expected.n_paired == 4
        assert num(row["pct_unchanged"]) == pytest.approx(expected.pct_unchanged)
        assert num(row["mean_abs_change"]) == pytest.approx(expected.mean_abs_change)
        assert num(row["wilcoxon_p"]) == pytest.approx(expected.wilcoxon_p)
        assert row["wilcoxon_note"] == expected.wilcoxon_note
        if expected.weighted_kappa is None:
            assert row["weighted_kappa"] == ""
        else:
            assert num(row["weighted_kappa"]) == pytest.approx(expected.weighted_kappa)
    assert "Wilcoxon" in rows["Treatment"]["method"]


@pytest.mark.django_db
def test_stability_agrees_with_the_services_pairing(scenario):
    pairs = services.paired_ratings(earlier=scenario.r1, later=scenario.r2)
    rows = {r["item_identity"]: r for r in read_csv(scenario.study, "stability.csv")}
    assert set(rows) == set(pairs)
    for identity, (before, after) in pairs.items():
        assert int(rows[identity]["n_paired"]) == stats.rating_stability(before, after).n_paired


# --------------------------------------------------------------------------- checklist


@pytest.mark.django_db
def test_checklist_has_the_35_accord_items_by_section_and_credes(scenario):
    items = exports.checklist_items(study=scenario.study)
    accord = [i for i in items if i.guideline == "ACCORD"]
    assert len(accord) == 35
    per_section = {s: sum(1 for i in accord if i.section == s) for s in exports.CHECKLIST_SECTIONS}
    assert per_section == {
        "Title and abstract": 1,
        "Introduction": 3,
        "Methods": 21,
        "Results": 5,
        "Discussion": 2,
        "Other information": 3,
    }
    assert [i.number for i in accord] == [str(n) for n in range(1, 36)]
    credes = [i for i in items if i.guideline == "CREDES"]
    assert credes and {i.section for i in credes} <= set(exports.CHECKLIST_SECTIONS)
    for item in items:
        assert item.status in (exports.PREFILLED, exports.PARTLY, exports.TO_AUTHORS)
        if item.status == exports.TO_AUTHORS:
            assert item.answer == exports.TO_AUTHORS
        if item.status == exports.PARTLY:
            assert exports.TO_AUTHORS in item.answer


@pytest.mark.django_db
def test_checklist_prefills_what_the_tool_knows_and_nothing_else(scenario):
    study = scenario.study
    items = {(i.guideline, i.topic): i for i in exports.checklist_items(study=study)}
    definition = items[("ACCORD", "Consensus definition")]
    assert "COMET: consensus in when >= 70% rate 7-9" in definition.answer
    assert study.protocol_hash in definition.answer
    assert f"{study.protocol_locked_at:%Y-%m-%d}" in definition.answer
    response = items[("ACCORD", "Participation per round")]
    assert response.status == exports.PREFILLED
    assert "round 1: 6/6 submitted (100%)" in response.answer
    assert "round 2: 4/6 submitted (66.7%)" in response.answer
    assert "attrition 33.3%" in items[("ACCORD", "Attrition")].answer
    assert "clinician 3, patient 3" in items[("ACCORD", "Panel description")].answer
    assert "3 accepted, 1 rejected" in items[("ACCORD", "New and changed items")].answer
    assert "Export consensus v1" in items[("ACCORD", "Final outcome")].answer
    assert "budget ran out" in items[("ACCORD", "Protocol")].answer  # the deviation
    for topic in ("Registration", "Ethics and consent", "Funding", "Strengths and limitations"):
        assert items[("ACCORD", topic)].answer == exports.TO_AUTHORS
    definition_credes = items[("CREDES", "Definition of consensus")]
    assert study.protocol_hash in definition_credes.answer


@pytest.mark.django_db
def test_checklist_markdown_and_html(scenario):
    study = scenario.study
    markdown = exports.render_export(study=study, name="checklist.md")[0].decode()
    assert markdown.count("| ") > 35
    for section in exports.CHECKLIST_SECTIONS:
        assert f"### {section}" in markdown
    assert study.protocol_hash in markdown
    page, content_type, _ = exports.render_export(study=study, name="checklist.html")
    assert content_type.startswith("text/html")
    text = page.decode()
    assert "<script" not in text and "to be completed by the authors" in text


# --------------------------------------------------------------------------- anonymity, queries


@pytest.mark.django_db
def test_no_export_contains_a_username_or_an_email(scenario):
    forbidden = identifying_strings(scenario.built)
    for name in exports.EXPORT_NAMES:
        if name == "report.pdf":
            continue  # compressed streams; the PDF's text is checked in test_report
        content = exports.render_export(study=scenario.study, name=name)[0].decode()
        for text in forbidden:
            assert not re.search(re.escape(text) + r"(?![0-9])", content), (name, text)


@pytest.mark.django_db
def test_loading_takes_a_fixed_number_of_queries(scenario, django_assert_max_num_queries):
    # One query per table whatever the number of items and panelists (no N+1).
    study = DelphiStudy.objects.get(pk=scenario.study.pk)
    with django_assert_max_num_queries(12):
        data = exports.load_study_data(study)
    with django_assert_max_num_queries(0):
        for builder in (
            exports.flow_rows,
            exports.item_rows,
            exports.change_rows,
            exports.comment_rows,
            exports.raw_rows,
            exports.statistics_rows,
            exports.stability_rows,
            exports.checklist_items,
        ):
            builder(study=study, data=data)
