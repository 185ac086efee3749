"""Drafting the next round: carry-over, triage, accepted suggestions."""

from __future__ import annotations

import pytest

from delphi import services
from delphi.services import DelphiError
from tests.delphi.flow import (
    BASE_URL,
    answer_all,
    make_panel_study,
    run_round,
    submit_ratings,
)
from tests.delphi.flow import THREE_LEVEL_TAXONOMY as TREE

# --------------------------------------------------------------------------- carry-over


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("drop_resolved", ["Diagnosis"]),
        (
            "rerate_all",
            [
                "Clinical Decision Support",
                "Diagnosis",
                "Treatment",
                "Administration",
                "Scheduling",
                "Billing",
            ],
        ),
    ],
)
def test_carry_over_policies(policy, expected):
    built = make_panel_study(n_panelists=6, carry_over=policy)
    run_round(built, built.round(1), {"Diagnosis": [1, 9, 1, 9, 5, 5]})
    second = services.start_next_round(study=built.study, actor=built.coordinator)
    items = list(second.items.order_by("position"))
    assert [i.name for i in items] == expected
    assert [i.position for i in items] == list(range(len(expected)))
    assert {i.item_version for i in items} == {1}
    assert {i.change_note for i in items} == {""}
    assert not second.collects_suggestions and second.status == "draft"


@pytest.mark.django_db
def test_nothing_left_to_rate_means_finish():
    built = make_panel_study(n_panelists=2, stopping_rule={"max_rounds": 3})
    run_round(built, built.round(1), {})
    with pytest.raises(DelphiError, match="no item is left to rate after round 1"):
        services.start_next_round(study=built.study, actor=built.coordinator)
    assert built.study.rounds.count() == 1


# --------------------------------------------------------------------------- triage


def _suggest(built, what, target=None, **details):
    return services.add_suggestion(
        panelist=built.panelists[0],
        round_=built.round(1),
        kind=what,
        text="rationale",
        target_identity=target.identity if target else None,
        details={k: (str(v.identity) if hasattr(v, "identity") else v) for k, v in details.items()},
    )


@pytest.mark.django_db
def test_triage_needs_a_reason_and_a_closed_round():
    built = make_panel_study(n_panelists=2, stopping_rule={"max_rounds": 3})
    first = built.round(1)
    services.open_round(round_=first, actor=built.coordinator, base_url=BASE_URL)
    suggestion = _suggest(built, "delete", first.items.get(name="Billing"))
    with pytest.raises(DelphiError, match="close round 1 before triaging"):
        services.triage_suggestion(
            suggestion=suggestion, actor=built.coordinator, accept=True, reason="ok"
        )
    submit_ratings(built.panelists[0], first, {"Diagnosis": 5})
    services.close_round(round_=first, actor=built.coordinator)
    with pytest.raises(DelphiError, match="give the reason"):
        services.triage_suggestion(
            suggestion=suggestion, actor=built.coordinator, accept=False, reason=" "
        )
    triaged = services.triage_suggestion(
        suggestion=suggestion, actor=built.coordinator, accept=False, reason="billing is in scope"
    )
    assert (triaged.status, triaged.triage_reason, triaged.triaged_by) == (
        "rejected",
        "billing is in scope",
        built.coordinator,
    )
    services.analyse_round(round_=first, actor=built.coordinator)
    services.release_feedback(round_=first, actor=built.coordinator)
    services.start_next_round(study=built.study, actor=built.coordinator)
    with pytest.raises(DelphiError, match="next round is drafted already"):
        services.triage_suggestion(
            suggestion=suggestion, actor=built.coordinator, accept=True, reason="x"
        )


@pytest.mark.django_db
def test_pending_suggestions_block_the_next_round():
    built = make_panel_study(n_panelists=2)
    first = built.round(1)
    services.open_round(round_=first, actor=built.coordinator, base_url=BASE_URL)
    _suggest(built, "rename", first.items.get(name="Billing"), name="Invoicing")
    answer_all(built, first, {"Diagnosis": [1, 9]})
    for step in (services.close_round, services.analyse_round, services.release_feedback):
        step(round_=first, actor=built.coordinator)
    with pytest.raises(DelphiError, match="triage the 1 pending suggestion"):
        services.start_next_round(study=built.study, actor=built.coordinator)


@pytest.mark.django_db
def test_accepted_suggestions_become_the_next_rounds_item_versions():
    built = make_panel_study(n_panelists=6, taxonomy=TREE)
    first = built.round(1)
    services.open_round(round_=first, actor=built.coordinator, base_url=BASE_URL)
    item = {i.name: i for i in first.items.all()}
    accepted = [
        _suggest(built, "add", name="Triage", kind="subcategory", parent_identity=item["Care"]),
        _suggest(built, "add", name="Consent", kind="task", parent_identity=item["Treatment"]),
        _suggest(built, "rename", item["Dosing"], name="Dose finding"),
        _suggest(built, "move", item["Imaging"], parent_identity=item["Treatment"]),
        # Admin's subcategory Billing (and its task Coding) follow it into Care.
        _suggest(built, "merge", item["Admin"], into_identity=item["Care"]),
        _suggest(built, "delete", item["Differential"]),
    ]
    rejected = _suggest(built, "delete", item["Diagnosis"])
    answer_all(built, first, {})  # everything rated 8: all consensus in
    services.close_round(round_=first, actor=built.coordinator)
    for suggestion in accepted:
        services.triage_suggestion(
            suggestion=suggestion,
            actor=built.coordinator,
            accept=True,
            reason=f"ok {suggestion.kind}",
        )
    services.triage_suggestion(
        suggestion=rejected, actor=built.coordinator, accept=False, reason="no"
    )
    services.analyse_round(round_=first, actor=built.coordinator)
    services.release_feedback(round_=first, actor=built.coordinator)

    second = services.start_next_round(study=built.study, actor=built.coordinator)
    got = {i.name: i for i in second.items.order_by("position")}
    # Drop resolved: only what an accepted suggestion changed or added is put to the panel.
    # (Consent sits where its parent Treatment was, though Treatment itself is not re-rated.)
    assert list(got) == ["Care", "Triage", "Imaging", "Consent", "Dose finding", "Billing"]
    assert got["Care"].item_version == 2
    assert got["Care"].change_note == "Merged with 'Admin' (ok merge)"
    assert (
        got["Triage"].item_version == 1 and got["Triage"].parent_identity == item["Care"].identity
    )
    assert got["Triage"].change_note == "Added at a panelist's suggestion (ok add)"
    assert (
        got["Consent"].kind == "task"
        and got["Consent"].parent_identity == item["Treatment"].identity
    )
    assert got["Dose finding"].identity == item["Dosing"].identity
    assert got["Dose finding"].item_version == 2
    assert got["Dose finding"].change_note == "Renamed from 'Dosing' (ok rename)"
    assert got["Imaging"].item_version == 2
    assert got["Imaging"].parent_identity == item["Treatment"].identity
    assert got["Imaging"].change_note == "Moved from 'Diagnosis' to 'Treatment' (ok move)"
    assert got["Billing"].item_version == 2
    assert got["Billing"].parent_identity == item["Care"].identity
    assert "moved under 'Care'" in got["Billing"].change_note
    assert "Admin" not in got and "Differential" not in got and "Coding" not in got


@pytest.mark.django_db
def test_deleting_an_item_removes_everything_under_it():
    built = make_panel_study(
        n_panelists=2, taxonomy=TREE, carry_over="rerate_all", stopping_rule={"max_rounds": 3}
    )
    first = built.round(1)
    services.open_round(round_=first, actor=built.coordinator, base_url=BASE_URL)
    suggestion = _suggest(built, "delete", first.items.get(name="Admin"))
    answer_all(built, first, {})
    services.close_round(round_=first, actor=built.coordinator)
    services.triage_suggestion(
        suggestion=suggestion, actor=built.coordinator, accept=True, reason="out of scope"
    )
    services.analyse_round(round_=first, actor=built.coordinator)
    services.release_feedback(round_=first, actor=built.coordinator)
    second = services.start_next_round(study=built.study, actor=built.coordinator)
    # Re-rate all keeps every other item, but not Admin's subcategory nor its task.
    assert [i.name for i in second.items.order_by("position")] == [
        "Care",
        "Diagnosis",
        "Differential",
        "Imaging",
        "Treatment",
        "Dosing",
    ]
