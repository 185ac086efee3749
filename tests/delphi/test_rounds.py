"""Running a round: statuses, opening, closing, reminders."""

from __future__ import annotations

import pytest
from django.core import mail

from delphi import services
from delphi.models import PanelistRound, Round
from delphi.services import DelphiError
from tests.delphi.flow import (
    BASE_URL,
    answer_all,
    make_panel_study,
    run_round,
    submit_ratings,
)

# --------------------------------------------------------------------------- statuses


@pytest.mark.django_db
def test_round_status_machine_refuses_steps_out_of_order():
    built = make_panel_study(n_panelists=2)
    actor, first = built.coordinator, built.round(1)
    for call, message in [
        (
            lambda: services.close_round(round_=first, actor=actor),
            "cannot close round 1: it is draft, not open",
        ),
        (
            lambda: services.analyse_round(round_=first, actor=actor),
            "cannot analyse round 1: it is draft, not closed",
        ),
        (lambda: services.send_reminders(round_=first, actor=actor, base_url=BASE_URL), "not open"),
        (lambda: services.release_feedback(round_=first, actor=actor), "not analysed"),
        (
            lambda: services.start_next_round(study=built.study, actor=actor),
            "not feedback released",
        ),
    ]:
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
    services.invite_panelist(
        study=built.study, actor=built.coordinator, email="late@example.org", base_url=BASE_URL
    )
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
    submit_ratings(built.panelists[0], first, {})
    services.save_answers(
        panelist=built.panelists[1],
        round_=first,
        answers={str(first.items.first().pk): {"rating": 3}},
    )
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
    submit_ratings(built.panelists[0], first, {})
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
