"""Running rounds: statuses, statistics, outcomes, stopping, reminders, carry-over, triage."""

from __future__ import annotations

import math

import pytest
from django.core import mail

from delphi import services
from delphi.models import PanelistRound, Round, RoundItemStatistics, Suggestion
from delphi.services import DelphiError
from tests.delphi.flow import BASE_URL, answer_all, make_panel_study, run_round
from tests.delphi.flow import THREE_LEVEL_TAXONOMY as TREE


def _submit(panelist, round_, ratings: dict[str, int | None]):
    answers = {}
    for item in round_.items.all():
        value = ratings.get(item.name, 8)
        answers[str(item.pk)] = {"placement_agrees": True} | (
            {"unable": True} if value is None else {"rating": value}
        )
    services.submit_round(panelist=panelist, round_=round_, answers=answers, comprehensiveness=4)


def _stats(round_, name, group=""):
    return RoundItemStatistics.objects.get(
        round_item__round=round_, round_item__name=name, group=group
    )


# --------------------------------------------------------------------------- statuses


@pytest.mark.django_db
def test_round_status_machine_refuses_steps_out_of_order():
    built = make_panel_study(n_panelists=2)
    actor, first = built.coordinator, built.round(1)
    for call, message in [
        (lambda: services.close_round(round_=first, actor=actor), "cannot close round 1: it is draft, not open"),
        (lambda: services.analyse_round(round_=first, actor=actor), "cannot analyse round 1: it is draft, not closed"),
        (lambda: services.send_reminders(round_=first, actor=actor, base_url=BASE_URL), "not open"),
        (lambda: services.release_feedback(round_=first, actor=actor), "not analysed"),
        (lambda: services.start_next_round(study=built.study, actor=actor), "not feedback released"),
    ]:  # fmt: skip
        with pytest.raises(DelphiError, match=message):
            call()
    services.open_round(round_=first, actor=actor, base_url=BASE_URL)
    built.study.refresh_from_db()
    assert built.study.status == "running"
    with pytest.raises(DelphiError, match="cannot open round 1: it is open, not draft"):
        services.open_round(round_=first, actor=actor, base_url=BASE_URL)
    answer_all(built, first, {})
    services.close_round(round_=first, actor=actor)
    with pytest.raises(DelphiError, match="not analysed"):
        services.release_feedback(round_=first, actor=actor)
    services.analyse_round(round_=first, actor=actor)
    with pytest.raises(DelphiError, match="it is analysed, not closed"):
        services.analyse_round(round_=first, actor=actor)
    services.release_feedback(round_=first, actor=actor)
    first.refresh_from_db()
    assert first.status == "feedback_released" and first.feedback_released_at is not None


@pytest.mark.django_db
def test_a_later_round_opens_only_after_the_feedback_of_the_one_before():
    built = make_panel_study(n_panelists=2)
    run_round(built, built.round(1), {"Diagnosis": [1, 9]})
    second = services.start_next_round(study=built.study, actor=built.coordinator)
    # Rolled back to "analysed" by hand: the rule is checked when opening.
    Round.objects.filter(pk=built.round(1).pk).update(status="analysed")
    with pytest.raises(DelphiError, match="release the feedback of round 1 before opening round 2"):
        services.open_round(round_=second, actor=built.coordinator, base_url=BASE_URL)


@pytest.mark.django_db
def test_opening_needs_a_panel():
    built = make_panel_study(n_panelists=0)
    with pytest.raises(DelphiError, match="invite the panel"):
        services.open_round(round_=built.round(1), actor=built.coordinator, base_url=BASE_URL)


@pytest.mark.django_db
def test_opening_mails_those_who_joined(django_capture_on_commit_callbacks):
    built = make_panel_study(n_panelists=2)
    services.invite_panelist(study=built.study, actor=built.coordinator, email="late@example.org",
                             base_url=BASE_URL)  # fmt: skip
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        services.open_round(round_=built.round(1), actor=built.coordinator, base_url=BASE_URL)
    assert sorted(m.to[0] for m in mail.outbox) == [
        "panelist0@example.org",
        "panelist1@example.org",
    ]
    assert f"{BASE_URL}/delphi/{built.study.pk}/round/" in mail.outbox[0].body
    assert PanelistRound.objects.filter(round=built.round(1)).count() == 3


@pytest.mark.django_db
def test_close_marks_those_who_did_not_submit_as_non_responders():
    built = make_panel_study(n_panelists=4)
    first = built.round(1)
    services.open_round(round_=first, actor=built.coordinator, base_url=BASE_URL)
    _submit(built.panelists[0], first, {})
    services.save_answers(panelist=built.panelists[1], round_=first,
                          answers={str(first.items.first().pk): {"rating": 3}})  # fmt: skip
    services.withdraw_panelist(panelist=built.panelists[3], actor=built.coordinator)
    services.close_round(round_=first, actor=built.coordinator)
    statuses = dict(
        PanelistRound.objects.filter(round=first).values_list("panelist__pseudonym", "status")
    )
    assert statuses == {
        "P01": "submitted",
        "P02": "non_responder",
        "P03": "non_responder",
        "P04": "withdrawn",
    }


# --------------------------------------------------------------------------- reminders


@pytest.mark.django_db
def test_reminders_go_only_to_those_who_have_not_submitted(django_capture_on_commit_callbacks):
    built = make_panel_study(n_panelists=3)
    pending, old_token = services.invite_panelist(
        study=built.study, actor=built.coordinator, email="late@example.org", base_url=BASE_URL
    )
    first = built.round(1)
    services.open_round(round_=first, actor=built.coordinator, base_url=BASE_URL)
    _submit(built.panelists[0], first, {})
    services.withdraw_panelist(panelist=built.panelists[2], actor=built.coordinator)
    mail.outbox.clear()
    with django_capture_on_commit_callbacks(execute=True):
        reminded = services.send_reminders(round_=first, actor=built.coordinator, base_url=BASE_URL)
    assert reminded == 2
    by_address = {m.to[0]: m for m in mail.outbox}
    assert sorted(by_address) == ["late@example.org", "panelist1@example.org"]
    assert by_address["panelist1@example.org"].subject.startswith("Reminder: round 1")
    # The one who never joined gets a fresh one-time link; the old one stops working.
    late = by_address["late@example.org"]
    assert late.subject.startswith("Reminder: Invitation")
    assert services.panelist_for_token(old_token) is None
    new_token = late.body.split("/delphi/join/")[1].split("/")[0]
    assert services.panelist_for_token(new_token) == pending
    stamped = PanelistRound.objects.filter(round=first, last_reminded_at__isnull=False)
    assert sorted(stamped.values_list("panelist__pseudonym", flat=True)) == ["P02", "P04"]


# --------------------------------------------------------------------------- statistics


@pytest.mark.django_db
def test_statistics_for_the_panel_and_each_group_with_small_groups_withheld():
    # Groups cycle clinician, clinician, nurse: P01..P10 -> c c n c c n c c n c.
    built = make_panel_study(n_panelists=10, groups=("clinician", "clinician", "nurse"))
    first = built.round(1)
    services.open_round(round_=first, actor=built.coordinator, base_url=BASE_URL)
    diagnosis = [9, 8, 2, 7, None, 3, 8, 5, 1]  # P10 (a clinician) never submits
    for panelist, rating in zip(built.panelists, diagnosis, strict=False):
        _submit(panelist, first, {"Diagnosis": rating})
    services.close_round(round_=first, actor=built.coordinator)
    services.analyse_round(round_=first, actor=built.coordinator)

    whole = _stats(first, "Diagnosis")
    # Ratings 1 2 3 5 7 8 8 9 (one unable, one non-responder): median (5 + 7) / 2 = 6,
    # mean 43 / 8; linear quantiles: Q1 at 1.75 -> 2 + 0.75 = 2.75, Q3 at 5.25 -> 8,
    # P30 at 2.1 -> 3 + 0.1 * 2 = 3.2, P70 at 4.9 -> 7 + 0.9 = 7.9; IPR 4.7,
    # AI |5 - 5.55| = 0.55, IPRAS 2.35 + 0.825 = 3.175 < IPR: disagreement.
    assert (whole.n_invited, whole.n_rated, whole.n_unable) == (10, 8, 1)
    assert whole.median == 6 and whole.mean == pytest.approx(5.375)
    assert (whole.q1, whole.q3, whole.iqr) == pytest.approx((2.75, 8, 5.25))
    assert (whole.p30, whole.p70) == pytest.approx((3.2, 7.9))
    assert (whole.ipr, whole.ai, whole.ipras) == pytest.approx((4.7, 0.55, 3.175))
    assert whole.disagreement is True
    # Sum of squared deviations 65.875 over 7.
    assert whole.sd == pytest.approx(math.sqrt(65.875 / 7))
    assert (whole.pct_low, whole.pct_mid, whole.pct_high) == pytest.approx((37.5, 12.5, 50))
    assert whole.counts == {"1": 1, "2": 1, "3": 1, "4": 0, "5": 1, "6": 0, "7": 1, "8": 2, "9": 1}
    assert whole.outcome == "no_consensus"

    clinicians = _stats(first, "Diagnosis", "clinician")
    # P01 9, P02 8, P04 7, P05 unable, P07 8, P08 5; P10 invited: 5 ratings 5 7 8 8 9.
    assert (clinicians.n_invited, clinicians.n_rated, clinicians.n_unable) == (7, 5, 1)
    assert (clinicians.median, clinicians.q1, clinicians.q3) == (8, 7, 8)
    assert clinicians.pct_high == 80 and clinicians.outcome == "consensus_in"

    nurses = _stats(first, "Diagnosis", "nurse")
    # Three ratings (2, 3, 1) are under the minimum of five: nothing of them is stored.
    assert nurses.outcome == "withheld" and nurses.n_invited == 3
    assert nurses.n_rated == 0 and nurses.median is None and nurses.counts == {}
    assert RoundItemStatistics.objects.filter(round_item__round=first).count() == 6 * 3


@pytest.mark.django_db
def test_drafts_of_non_responders_are_never_counted():
    built = make_panel_study(n_panelists=3)
    first = built.round(1)
    services.open_round(round_=first, actor=built.coordinator, base_url=BASE_URL)
    _submit(built.panelists[0], first, {"Diagnosis": 9})
    item = first.items.get(name="Diagnosis")
    services.save_answers(
        panelist=built.panelists[1], round_=first, answers={str(item.pk): {"rating": 1}}
    )
    services.close_round(round_=first, actor=built.coordinator)
    services.analyse_round(round_=first, actor=built.coordinator)
    row = _stats(first, "Diagnosis")
    assert (row.n_invited, row.n_rated, row.median) == (3, 1, 9)


# A: 7 7 8 8 9 9 -> 100% high; median 8, IQR 8.75 - 7.25 = 1.5; P30 7.5, P70 8.5: IPR 1 <
#    IPRAS 2.35 + 1.5 * 3 = 6.85.
# B: 1 1 2 2 3 9 -> 83.3% low, 16.7% high; median 2, IQR 2.75 - 1.25 = 1.5; IPR 1 < 6.85.
RATINGS = {"Diagnosis": [7, 7, 8, 8, 9, 9], "Billing": [1, 1, 2, 2, 3, 9]}
COMET = {"preset": "comet_70_15"}
PERCENT = {"preset": "percent_agreement"}


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("rule", "a", "b"),
    [
        (COMET, "consensus_in", "no_consensus"),  # B: 16.7% high is not < 15%
        (PERCENT, "consensus_in", "consensus_out"),
        ({"preset": "median_iqr"}, "no_consensus", "no_consensus"),  # IQR 1.5 > 1
        ({"preset": "median_iqr", "iqr_at_most": 1.5}, "consensus_in", "consensus_out"),
        ({"preset": "rand_ucla"}, "consensus_in", "consensus_out"),
        ({"op": "and", "rules": [COMET, PERCENT]}, "consensus_in", "no_consensus"),
        ({"op": "or", "rules": [COMET, PERCENT]}, "consensus_in", "consensus_out"),
        ({"op": "or", "rules": [COMET, PERCENT], "min_n": 7}, "too_few_ratings", "too_few_ratings"),
        ({"preset": "rand_ucla", "min_n": 6}, "consensus_in", "consensus_out"),
    ],
)
def test_outcomes_follow_the_locked_rule(rule, a, b):
    built = make_panel_study(n_panelists=6, consensus_rule=rule)
    run_round(built, built.round(1), RATINGS)
    assert _stats(built.round(1), "Diagnosis").outcome == a
    assert _stats(built.round(1), "Billing").outcome == b


# --------------------------------------------------------------------------- stopping


@pytest.mark.django_db
def test_stopping_decision_is_stored_when_analysed():
    built = make_panel_study(n_panelists=6, stopping_rule={"max_rounds": 2, "all_resolved": True})
    first = run_round(built, built.round(1), {"Diagnosis": [1, 9, 1, 9, 5, 5]})
    assert first.stopping_decision == {
        "stop": False,
        "criteria_met": [],
        "reasons": ["round 1 of at most 2", "1 of 6 items of round 1 without consensus"],
    }
    second = run_round(built, services.start_next_round(study=built.study, actor=built.coordinator),
                       {"Diagnosis": [8, 9, 8, 9, 7, 7]})  # fmt: skip
    assert second.stopping_decision["stop"] is True
    assert second.stopping_decision["criteria_met"] == ["max_rounds", "all_resolved"]
    with pytest.raises(DelphiError, match="stopping rule is met"):
        services.start_next_round(study=built.study, actor=built.coordinator)


@pytest.mark.django_db
def test_stability_compares_the_same_item_version_between_rounds():
    built = make_panel_study(
        n_panelists=6, stopping_rule={"stability": {"pct_unchanged_at_least": 80}},
        carry_over="drop_resolved",
    )  # fmt: skip
    contested = {"Diagnosis": [1, 9, 1, 9, 5, 5], "Billing": [1, 9, 1, 9, 5, 5]}
    run_round(built, built.round(1), contested)
    assert built.round(1).stopping_decision["reasons"] == ["stability needs two rounds to compare"]
    # Billing is reworded for round 2, so it has no comparison and blocks the stability stop.
    Suggestion.objects.create(
        round=built.round(1), panelist=built.panelists[0], kind="rename",
        target_identity=built.round(1).items.get(name="Billing").identity,
        details={"name": "Billing and coding"}, text="clearer",
    )  # fmt: skip
    services.triage_suggestion(suggestion=Suggestion.objects.get(), actor=built.coordinator,
                               accept=True, reason="clearer")  # fmt: skip
    second = services.start_next_round(study=built.study, actor=built.coordinator)
    # 5 of 6 unchanged on Diagnosis = 83.3% >= 80.
    run_round(
        built, second, {"Diagnosis": [1, 9, 1, 9, 5, 6], "Billing and coding": contested["Billing"]}
    )
    second.refresh_from_db()
    assert second.stopping_decision["stop"] is False
    assert "1 of 2 unresolved items have fewer than 80%" in second.stopping_decision["reasons"][0]
    third = services.start_next_round(study=built.study, actor=built.coordinator)
    run_round(
        built, third, {"Diagnosis": [1, 9, 1, 9, 5, 6], "Billing and coding": [1, 9, 1, 9, 5, 5]}
    )
    third.refresh_from_db()
    assert third.stopping_decision["stop"] is True
    assert third.stopping_decision["criteria_met"] == ["stability"]


# --------------------------------------------------------------------------- carry-over


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("policy", "expected"),
    [
        ("drop_resolved", ["Diagnosis"]),
        ("rerate_all", ["Clinical Decision Support", "Diagnosis", "Treatment", "Administration",
                        "Scheduling", "Billing"]),
    ],
)  # fmt: skip
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
        panelist=built.panelists[0], round_=built.round(1), kind=what, text="rationale",
        target_identity=target.identity if target else None,
        details={k: (str(v.identity) if hasattr(v, "identity") else v) for k, v in details.items()},
    )  # fmt: skip


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
    _submit(built.panelists[0], first, {"Diagnosis": 5})
    services.close_round(round_=first, actor=built.coordinator)
    with pytest.raises(DelphiError, match="give the reason"):
        services.triage_suggestion(
            suggestion=suggestion, actor=built.coordinator, accept=False, reason=" "
        )
    triaged = services.triage_suggestion(suggestion=suggestion, actor=built.coordinator,
                                         accept=False, reason="billing is in scope")  # fmt: skip
    assert (triaged.status, triaged.triage_reason, triaged.triaged_by) == (
        "rejected", "billing is in scope", built.coordinator)  # fmt: skip
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
        services.triage_suggestion(suggestion=suggestion, actor=built.coordinator, accept=True,
                                   reason=f"ok {suggestion.kind}")  # fmt: skip
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
    services.triage_suggestion(suggestion=suggestion, actor=built.coordinator, accept=True,
                               reason="out of scope")  # fmt: skip
    services.analyse_round(round_=first, actor=built.coordinator)
    services.release_feedback(round_=first, actor=built.coordinator)
    second = services.start_next_round(study=built.study, actor=built.coordinator)
    # Re-rate all keeps every other item, but not Admin's subcategory nor its task.
    assert [i.name for i in second.items.order_by("position")] == [
        "Care", "Diagnosis", "Differential", "Imaging", "Treatment", "Dosing",
    ]  # fmt: skip
