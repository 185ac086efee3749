"""Studies the export and report tests read, driven through the services, and readers of
what an export wrote."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from typing import Any

from delphi import services
from delphi.exports.registry import render_export
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


def _suggest_in_round_1(built: PanelStudy, r1: Round) -> list[tuple[Any, bool, str]]:
    """A rename, a delete and an add to accept, and a delete to reject, with the reasons."""
    p = built.panelists
    item = {i.name: i for i in r1.items.all()}
    rename = services.add_suggestion(
        panelist=p[0],
        round_=r1,
        kind="rename",
        target_identity=item["Billing"].identity,
        details={"name": "Billing and coding"},
        text="Coding belongs with billing",
    )
    delete = services.add_suggestion(
        panelist=p[1],
        round_=r1,
        kind="delete",
        target_identity=item["Coding"].identity,
        text="Duplicate of billing",
    )
    refused = services.add_suggestion(
        panelist=p[2],
        round_=r1,
        kind="delete",
        target_identity=item["Scheduling"].identity,
        text="Not a clinical task",
    )
    parent = str(item["Clinical Decision Support"].identity)
    add = services.add_suggestion(
        panelist=p[3],
        round_=r1,
        kind="add",
        text="Triage is missing",
        details={"name": "Triage", "kind": "subcategory", "parent_identity": parent},
    )
    return [
        (rename, True, "Clearer scope"),
        (delete, True, "Duplicate of billing"),
        (refused, False, "Scheduling is in the MedHELM scope"),
        (add, True, "A common task"),
    ]


def _run_round_1(built: PanelStudy) -> None:
    actor, r1 = built.coordinator, built.round(1)
    services.open_round(round_=r1, actor=actor, base_url=BASE_URL)
    decisions = _suggest_in_round_1(built, r1)
    comments = {0: {"Treatment": "=Too broad as worded"}, 3: {"Treatment": "Keep it"}}
    for i, panelist in enumerate(built.panelists):
        services.submit_round(
            panelist=panelist,
            round_=r1,
            answers=_answers(r1, R1, i, comments.get(i, {})),
            comprehensiveness=[4, 4, 3, 5, 4, 2][i],
        )
    services.close_round(round_=r1, actor=actor)
    services.analyse_round(round_=r1, actor=actor)
    for suggestion, accept, reason in decisions:
        services.triage_suggestion(suggestion=suggestion, actor=actor, accept=accept, reason=reason)
    services.release_feedback(round_=r1, actor=actor)


def _run_round_2(built: PanelStudy) -> None:
    actor, p = built.coordinator, built.panelists
    r2 = services.start_next_round(study=built.study, actor=actor)
    services.open_round(round_=r2, actor=actor, base_url=BASE_URL)
    comments = {0: {"Scheduling": "Alpha comment"}, 1: {"Scheduling": "Zebra comment"}}
    for i in range(4):
        services.submit_round(
            panelist=p[i],
            round_=r2,
            answers=_answers(r2, R2, i, comments.get(i, {})),
            comprehensiveness=[5, 4, 4, 4][i],
        )
    services.save_answers(
        panelist=p[4], round_=r2, answers=_answers(r2, R2, 0, {"Treatment": DRAFT_SECRET})
    )
    services.withdraw_panelist(panelist=p[5], actor=actor, reason="moved abroad")
    services.close_round(round_=r2, actor=actor)
    services.analyse_round(round_=r2, actor=actor)
    services.release_feedback(round_=r2, actor=actor)


def build_two_round_study() -> Scenario:
    """Two rounds through the services: suggestions triaged after round 1 (a rename, an add
    and a delete accepted, a delete rejected), a non-responder and a withdrawal in round 2,
    the study finished early and its taxonomy released."""
    built = make_panel_study(n_panelists=6, groups=GROUPS, taxonomy=TAXONOMY)
    _run_round_1(built)
    _run_round_2(built)
    actor = built.coordinator
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


BRANCH_TAXONOMY = {
    "name": "Branches",
    "categories": [
        {
            "name": "Cat A",
            "subcategories": [
                {"name": "Sub 1", "tasks": ["T1"]},
                {"name": "Sub 2", "tasks": ["T2"]},
            ],
        },
        {"name": "Cat B", "subcategories": [{"name": "Sub 3", "tasks": ["T3"]}]},
    ],
}


def build_branch_study() -> PanelStudy:
    """Round 1 with nothing resolved, then Sub 2 merged into Sub 1 (its task T2 moves with
    it) and the category Cat B deleted (its branch goes with it); round 2 drafted."""
    built = make_panel_study(n_panelists=3, taxonomy=BRANCH_TAXONOMY)
    actor, r1 = built.coordinator, built.round(1)
    services.open_round(round_=r1, actor=actor, base_url=BASE_URL)
    item = {i.name: i for i in r1.items.all()}
    merge = services.add_suggestion(
        panelist=built.panelists[0],
        round_=r1,
        kind="merge",
        text="Same thing",
        target_identity=item["Sub 2"].identity,
        details={"into_identity": str(item["Sub 1"].identity)},
    )
    delete = services.add_suggestion(
        panelist=built.panelists[1],
        round_=r1,
        kind="delete",
        text="Out of scope",
        target_identity=item["Cat B"].identity,
    )
    answer_all(built, r1, {name: [5, 5, 5] for name in item})  # nothing resolved
    services.close_round(round_=r1, actor=actor)
    services.analyse_round(round_=r1, actor=actor)
    services.triage_suggestion(suggestion=merge, actor=actor, accept=True, reason="Overlap")
    services.triage_suggestion(suggestion=delete, actor=actor, accept=True, reason="Not ours")
    services.release_feedback(round_=r1, actor=actor)
    services.start_next_round(study=built.study, actor=actor)
    return built


def identifying_strings(built: PanelStudy) -> list[str]:
    """What must never appear in an export: usernames and e-mail addresses."""
    users = [p.user for p in built.panelists] + [built.coordinator]
    return (
        [u.username for u in users] + [u.email for u in users] + [p.email for p in built.panelists]
    )


def read_csv(study: DelphiStudy, name: str) -> list[dict[str, str]]:
    content, content_type, filename = render_export(study=study, name=name)
    assert content_type.startswith("text/csv")
    assert filename == f"delphi-study-{study.pk}-{name}"
    return list(csv.DictReader(io.StringIO(content.decode("utf-8"))))


def num(text: str) -> float | None:
    return float(text) if text != "" else None
