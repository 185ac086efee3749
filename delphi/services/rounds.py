"""Running a round: open, remind, close, triage its suggestions, release its feedback.

Analysis is in analysis.py, drafting the next round in next_round.py, ending the study and
releasing its taxonomy in release.py.
"""

from __future__ import annotations

from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.core.mail import send_mail
from django.db import transaction
from django.utils import timezone

from delphi.audit import record
from delphi.errors import DelphiError
from delphi.models import DelphiStudy, Panelist, PanelistRound, Round, Suggestion
from delphi.services.panel import renew_invitation
from delphi.services.round_state import ACTIVE_STATUSES, locked_round, require_status
from medhelm_site.common.text_limits import checked_column_text


def _round_link(round_: Round, base_url: str) -> str:
    return f"{base_url.rstrip('/')}/delphi/{round_.study_id}/round/"


# --------------------------------------------------------------------------- open / close


@transaction.atomic
def open_round(
    *,
    round_: Round,
    actor: AbstractBaseUser,
    base_url: str,
    closes_at: datetime | None = None,
) -> Round:
    """Open a drafted round to every panelist who has not withdrawn, and tell those who joined."""
    round_ = locked_round(round_)
    require_status(round_, Round.Status.DRAFT, doing="open")
    study = DelphiStudy.objects.select_for_update().get(pk=round_.study_id)
    if study.status not in (DelphiStudy.Status.LOCKED, DelphiStudy.Status.RUNNING):
        raise DelphiError(f"cannot open a round while the study is {study.get_status_display()}")
    if round_.number > 1:
        before = study.rounds.get(number=round_.number - 1)
        if before.status != Round.Status.FEEDBACK_RELEASED:
            raise DelphiError(
                f"release the feedback of round {before.number} before opening round "
                f"{round_.number}: panelists rate again in the light of it"
            )
    panelists = list(study.panelists.filter(withdrawn_at__isnull=True))
    if not panelists:
        raise DelphiError("invite the panel before opening a round")
    if not round_.items.exists():
        raise DelphiError(f"round {round_.number} has no items")
    PanelistRound.objects.bulk_create(
        [PanelistRound(panelist=p, round=round_) for p in panelists], ignore_conflicts=True
    )
    round_.status = Round.Status.OPEN
    round_.opened_at = timezone.now()
    round_.closes_at = closes_at
    round_.save(update_fields=["status", "opened_at", "closes_at"])
    if study.status == DelphiStudy.Status.LOCKED:
        study.status = DelphiStudy.Status.RUNNING
        study.save(update_fields=["status"])
    record(
        study=study,
        actor=actor,
        action="round.open",
        target=f"round {round_.number}",
        after={
            "panelists": len(panelists),
            "closes_at": closes_at.isoformat() if closes_at else None,
        },
    )
    joined = [p for p in panelists if p.user_id is not None]
    link = _round_link(round_, base_url)
    transaction.on_commit(lambda: _mail_opened(study, round_, joined, link, closes_at))
    return round_


def _mail_opened(
    study: DelphiStudy,
    round_: Round,
    panelists: list[Panelist],
    link: str,
    closes_at: datetime | None,
) -> None:
    deadline = f" It closes on {closes_at:%Y-%m-%d %H:%M} UTC." if closes_at else ""
    for panelist in panelists:
        send_mail(
            f"Round {round_.number} of {study.title!r} is open",
            f"Dear panelist {panelist.pseudonym},\n\nround {round_.number} is open.{deadline}"
            f"\n\nYour answers save as you go:\n{link}\n",
            None,
            [panelist.email],
        )


@transaction.atomic
def send_reminders(*, round_: Round, actor: AbstractBaseUser, base_url: str) -> int:
    """Remind everyone who has not submitted the open round; returns how many were reminded.
    Panelists who never joined get a fresh one-time link (the old one stops working)."""
    round_ = locked_round(round_)
    require_status(round_, Round.Status.OPEN, doing="send reminders for")
    entries = list(
        round_.panelist_rounds.select_related("panelist")
        .filter(status__in=ACTIVE_STATUSES, panelist__withdrawn_at__isnull=True)
        .select_for_update(of=("self",))
    )
    link = _round_link(round_, base_url)
    now = timezone.now()
    to_mail: list[Panelist] = []
    for entry in entries:
        if entry.panelist.user_id is None:
            renew_invitation(panelist=entry.panelist, actor=actor, base_url=base_url, reminder=True)
        else:
            to_mail.append(entry.panelist)
        entry.last_reminded_at = now
        entry.save(update_fields=["last_reminded_at"])
    record(
        study=round_.study,
        actor=actor,
        action="round.remind",
        target=f"round {round_.number}",
        after={"reminded": [e.panelist.pseudonym for e in entries]},
    )

    def notify() -> None:
        for panelist in to_mail:
            send_mail(
                f"Reminder: round {round_.number} of {round_.study.title!r}",
                f"Dear panelist {panelist.pseudonym},\n\nyour answers to round {round_.number} "
                f"are not submitted yet. What you saved is kept:\n{link}\n",
                None,
                [panelist.email],
            )

    transaction.on_commit(notify)
    return len(entries)


@transaction.atomic
def close_round(*, round_: Round, actor: AbstractBaseUser) -> Round:
    """Close the round: those who did not submit become non-responders (their drafts are kept
    but never counted)."""
    round_ = locked_round(round_)
    require_status(round_, Round.Status.OPEN, doing="close")
    non_responders = round_.panelist_rounds.filter(status__in=ACTIVE_STATUSES).update(
        status=PanelistRound.Status.NON_RESPONDER
    )
    round_.status = Round.Status.CLOSED
    round_.closed_at = timezone.now()
    round_.save(update_fields=["status", "closed_at"])
    submitted = round_.panelist_rounds.filter(status=PanelistRound.Status.SUBMITTED).count()
    record(
        study=round_.study,
        actor=actor,
        action="round.close",
        target=f"round {round_.number}",
        after={"submitted": submitted, "non_responders": non_responders},
    )
    return round_


@transaction.atomic
def triage_suggestion(
    *, suggestion: Suggestion, actor: AbstractBaseUser, accept: bool, reason: str
) -> Suggestion:
    """Accept or reject a suggestion, with the reason recorded (and shown in the report)."""
    checked_column_text(
        reason, model=Suggestion, column="triage_reason", error=DelphiError, field="reason"
    )
    suggestion = (
        Suggestion.objects.select_for_update().select_related("round").get(pk=suggestion.pk)
    )
    if not reason.strip():
        raise DelphiError(
            "give the reason for accepting or rejecting the suggestion", field="reason"
        )
    if suggestion.round.study.rounds.filter(number=suggestion.round.number + 1).exists():
        raise DelphiError("the next round is drafted already; its items can no longer change")
    if suggestion.round.status in (Round.Status.DRAFT, Round.Status.OPEN):
        raise DelphiError(f"close round {suggestion.round.number} before triaging its suggestions")
    before = {"status": suggestion.status, "reason": suggestion.triage_reason}
    suggestion.status = Suggestion.Status.ACCEPTED if accept else Suggestion.Status.REJECTED
    suggestion.triage_reason = reason.strip()
    suggestion.triaged_by = actor
    suggestion.triaged_at = timezone.now()
    suggestion.save(update_fields=["status", "triage_reason", "triaged_by", "triaged_at"])
    record(
        study=suggestion.round.study,
        actor=actor,
        action="suggestion.triage",
        target=f"suggestion {suggestion.pk} ({suggestion.kind})",
        before=before,
        after={"status": suggestion.status},
        reason=suggestion.triage_reason,
    )
    return suggestion


@transaction.atomic
def release_feedback(*, round_: Round, actor: AbstractBaseUser) -> Round:
    """Make the round's group statistics and anonymous comments visible to the panel."""
    round_ = locked_round(round_)
    require_status(round_, Round.Status.ANALYSED, doing="release the feedback of")
    round_.status = Round.Status.FEEDBACK_RELEASED
    round_.feedback_released_at = timezone.now()
    round_.save(update_fields=["status", "feedback_released_at"])
    record(
        study=round_.study, actor=actor, action="round.feedback", target=f"round {round_.number}"
    )
    return round_
