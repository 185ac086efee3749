"""A panelist's answers: drafts saved as they type, submission, suggestions in round 1."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from delphi import protocol, suggestions
from delphi.audit import record
from delphi.errors import DelphiError
from delphi.models import (
    Panelist,
    PanelistRound,
    Response,
    Round,
    RoundItem,
    RoundItemStatistics,
    Suggestion,
    TaxonomyNode,
)
from delphi.selectors import placement_categories
from delphi.stats import display
from medhelm_site.common.text_limits import check_json_text, checked_text, column_max_length

ANSWER_KEYS = {"rating", "unable", "placement_agrees", "placement_choice", "comment", "reason"}


@dataclass(frozen=True)
class Answer:
    rating: int | None = None
    unable: bool = False
    placement_agrees: bool | None = None
    placement_choice: uuid.UUID | None = None
    comment: str = ""
    reason: str = ""


def parse_answer(raw: Any, *, where: str) -> Answer:
    """One item's answer from JSON or form data; DelphiError naming `where` otherwise."""
    if not isinstance(raw, dict):
        raise DelphiError(f"{where}: must be an object", field="answers")
    unknown = set(raw) - ANSWER_KEYS
    if unknown:
        raise DelphiError(f"{where}: unknown key(s) {sorted(unknown)}", field="answers")
    rating = raw.get("rating")
    if rating in ("", None):
        rating = None
    else:
        try:
            rating = int(rating)
        except (TypeError, ValueError):
            raise DelphiError(
                f"{where}.rating: must be a whole number 1-9, got {rating!r}", field="answers"
            ) from None
        if (
            str(raw.get("rating")).strip() not in (str(rating), f"{rating}.0")
            or not 1 <= rating <= 9
        ):
            raise DelphiError(
                f"{where}.rating: must be a whole number 1-9, got {raw['rating']!r}",
                field="answers",
            )
    unable = raw.get("unable") in (True, "true", "on", "1", 1)
    if unable and rating is not None:
        raise DelphiError(f"{where}: give a rating or 'unable to rate', not both", field="answers")
    agrees = raw.get("placement_agrees")
    if agrees in ("", None):
        agrees = None
    elif agrees in (True, "true", "yes", "1", 1):
        agrees = True
    elif agrees in (False, "false", "no", "0", 0):
        agrees = False
    else:
        raise DelphiError(
            f"{where}.placement_agrees: must be yes or no, got {agrees!r}", field="answers"
        )
    choice = raw.get("placement_choice")
    if choice in ("", None):
        choice = None
    else:
        try:
            choice = uuid.UUID(str(choice))
        except ValueError:
            raise DelphiError(
                f"{where}.placement_choice: not a category id: {choice!r}", field="answers"
            ) from None
    comment = raw.get("comment") or ""
    reason = raw.get("reason") or ""
    if not isinstance(comment, str) or not isinstance(reason, str):
        raise DelphiError(f"{where}: comment and reason must be text", field="answers")
    for name, text in (("comment", comment), ("reason", reason)):
        checked_text(text, field="answers", error=DelphiError, where=f"{where}.{name}")
    if len(comment) > 5000 or len(reason) > 5000:
        raise DelphiError(
            f"{where}: comment and reason are limited to 5,000 characters", field="answers"
        )
    return Answer(rating, unable, agrees, choice, comment.strip(), reason.strip())


def _open_panelist_round(*, panelist: Panelist, round_: Round) -> PanelistRound:
    # The round as it is now, whatever the caller holds: it may have closed meanwhile.
    round_.refresh_from_db(fields=["status"])
    panelist.refresh_from_db(fields=["withdrawn_at"])
    if round_.status != Round.Status.OPEN:
        raise DelphiError(
            f"round {round_.number} is {round_.get_status_display().lower()}, not open"
        )
    if panelist.withdrawn_at is not None:
        raise DelphiError("you have withdrawn from this panel")
    entry = (
        PanelistRound.objects.select_for_update().filter(panelist=panelist, round=round_).first()
    )
    if entry is None:
        raise DelphiError(f"you are not invited to round {round_.number}")
    if entry.status == PanelistRound.Status.SUBMITTED:
        raise DelphiError(f"you submitted round {round_.number} already; answers are final")
    if entry.status in (PanelistRound.Status.WITHDRAWN, PanelistRound.Status.NON_RESPONDER):
        raise DelphiError(f"round {round_.number} is closed for you ({entry.status})")
    return entry


@transaction.atomic
def save_answers(
    *,
    panelist: Panelist,
    round_: Round,
    answers: dict[str, Any],
    comprehensiveness: int | None = None,
) -> PanelistRound:
    """Save answers as drafts (partial answers allowed). `answers` maps a round item id to its
    answer. All or nothing: one bad answer saves none of them and names the item."""
    entry = _open_panelist_round(panelist=panelist, round_=round_)
    questions = protocol.validate_questions(round_.study.questions)
    items = {str(item.pk): item for item in round_.items.all()}
    categories = set(placement_categories(round_=round_))
    parsed: list[tuple[RoundItem, Answer]] = []
    # Every answer is checked before any is written, so that one bad answer saves none.
    for key, raw in answers.items():
        item = items.get(str(key))
        if item is None:
            raise DelphiError(
                f"answers[{key}]: no such item in round {round_.number}", field="answers"
            )
        where = f"answers[{item.name!r}]"
        answer = parse_answer(raw, where=where)
        if answer.unable and not questions["allow_unable_to_rate"]:
            raise DelphiError(
                f"{where}: 'unable to rate' is not offered in this study; rate 1-9", field="answers"
            )
        if answer.comment and not questions["comments"]:
            raise DelphiError(f"{where}: this study asks for no comments", field="answers")
        if answer.placement_choice is not None and answer.placement_choice not in categories:
            raise DelphiError(
                f"{where}.placement_choice: not a category of this taxonomy", field="answers"
            )
        parsed.append((item, answer))
    for item, answer in parsed:
        Response.objects.update_or_create(
            panelist=panelist,
            round_item=item,
            defaults={
                "rating": answer.rating,
                "unable_to_rate": answer.unable,
                "placement_agrees": answer.placement_agrees,
                "placement_choice": answer.placement_choice,
                "comment": answer.comment,
                "reason_outside_iqr": answer.reason,
                "is_draft": True,
            },
        )
    if comprehensiveness not in (None, ""):
        entry.comprehensiveness = _comprehensiveness(comprehensiveness)
    if entry.status == PanelistRound.Status.INVITED:
        entry.status = PanelistRound.Status.STARTED
        entry.started_at = timezone.now()
    entry.save(update_fields=["comprehensiveness", "status", "started_at"])
    return entry


def _check_suggestion_text(*, text: Any, details: dict[str, Any]) -> None:
    """What the database cannot store of a suggestion, refused before anything is read or
    written: a NUL anywhere (its details are jsonb), or a name longer than the item (and
    then taxonomy node) it would become if accepted."""
    checked_text(text, field="text", error=DelphiError)
    check_json_text(details, field="details", error=DelphiError)
    name = details.get("name")
    if isinstance(name, str):
        longest = min(column_max_length(RoundItem, "name"), column_max_length(TaxonomyNode, "name"))
        checked_text(name.strip(), field="name", error=DelphiError, max_length=longest)


def _comprehensiveness(value: Any) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        number = 0
    if not 1 <= number <= 5 or str(value).strip() != str(number):
        raise DelphiError(
            f"comprehensiveness: must be a whole number 1-5, got {value!r}",
            field="comprehensiveness",
        )
    return number


def previous_iqr(*, round_item: RoundItem) -> tuple[float, float] | None:
    """The whole panel's Q1 and Q3 for this node in the round before, if it was fed back."""
    row = (
        RoundItemStatistics.objects.filter(
            group="",
            round_item__identity=round_item.identity,
            round_item__round__study_id=round_item.round.study_id,
            round_item__round__number=round_item.round.number - 1,
            round_item__round__status=Round.Status.FEEDBACK_RELEASED,
            q1__isnull=False,
        )
        .values_list("q1", "q3")
        .first()
    )
    return row


def previous_iqrs(*, round_: Round) -> dict[uuid.UUID, tuple[float, float]]:
    """`previous_iqr` for every node of the round at once: one query, not one per item."""
    return {
        identity: (q1, q3)
        for identity, q1, q3 in RoundItemStatistics.objects.filter(
            group="",
            round_item__round__study_id=round_.study_id,
            round_item__round__number=round_.number - 1,
            round_item__round__status=Round.Status.FEEDBACK_RELEASED,
            q1__isnull=False,
        ).values_list("round_item__identity", "q1", "q3")
    }


def missing_answers(*, panelist: Panelist, round_: Round) -> list[str]:
    """What still stops this panelist from submitting, one line per problem."""
    questions = protocol.validate_questions(round_.study.questions)
    responses = {r.round_item_id: r for r in panelist.responses.filter(round_item__round=round_)}
    problems: list[str] = []
    iqrs = previous_iqrs(round_=round_) if round_.study.ask_reason_outside_iqr else {}
    for item in round_.items.order_by("position", "id"):
        response = responses.get(item.pk)
        if response is None or (response.rating is None and not response.unable_to_rate):
            problems.append(f"{item.name}: no rating")
            continue
        placement = questions["placement"]
        if item.kind != "category" and placement == "agree" and response.placement_agrees is None:
            problems.append(f"{item.name}: say whether it belongs under its parent")
        if item.kind == "subcategory" and placement == "choose" and not response.placement_choice:
            problems.append(f"{item.name}: choose its category")
        if round_.study.ask_reason_outside_iqr and response.rating is not None:
            iqr = iqrs.get(item.identity)
            outside = iqr is not None and not iqr[0] <= response.rating <= iqr[1]
            if outside and not response.reason_outside_iqr:
                problems.append(
                    f"{item.name}: your rating {response.rating} is outside the panel's "
                    f"IQR {display.iqr_text(iqr[0], iqr[1])}; give a reason"
                )
    if questions["comprehensiveness"]:
        entry = PanelistRound.objects.filter(panelist=panelist, round=round_).first()
        if entry is None or entry.comprehensiveness is None:
            problems.append("comprehensiveness of the whole taxonomy: not rated")
    return problems


def submit_round(
    *,
    panelist: Panelist,
    round_: Round,
    answers: dict[str, Any] | None = None,
    comprehensiveness: int | None = None,
) -> PanelistRound:
    """Save any last answers, check completeness, and make them final.

    The last answers are saved as drafts in their own transaction first: a submission refused
    as incomplete keeps what the panelist just gave (unless the caller's own transaction
    rolls back)."""
    save_answers(
        panelist=panelist, round_=round_, answers=answers or {}, comprehensiveness=comprehensiveness
    )
    with transaction.atomic():
        return _finalise(panelist=panelist, round_=round_)


def _finalise(*, panelist: Panelist, round_: Round) -> PanelistRound:
    # Checked again under the row lock: the round may have closed since the drafts were saved.
    entry = _open_panelist_round(panelist=panelist, round_=round_)
    problems = missing_answers(panelist=panelist, round_=round_)
    if problems:
        raise DelphiError(
            f"round {round_.number} is not complete: "
            + "; ".join(problems[:10])
            + (f"; and {len(problems) - 10} more" if len(problems) > 10 else "")
        )
    Response.objects.filter(panelist=panelist, round_item__round=round_).update(is_draft=False)
    entry.status = PanelistRound.Status.SUBMITTED
    entry.submitted_at = timezone.now()
    entry.save(update_fields=["status", "submitted_at"])
    record(
        study=round_.study,
        actor=panelist.user,
        action="round.submit",
        target=f"round {round_.number} / {panelist.pseudonym}",
    )
    return entry


@transaction.atomic
def add_suggestion(
    *,
    panelist: Panelist,
    round_: Round,
    kind: str,
    text: str,
    target_identity: str | uuid.UUID | None = None,
    details: dict[str, Any] | None = None,
) -> Suggestion:
    """A suggestion to change the taxonomy (round 1): add, rename, move, merge or delete."""
    _check_suggestion_text(text=text, details=details or {})
    _open_panelist_round(panelist=panelist, round_=round_)
    if not round_.collects_suggestions:
        raise DelphiError(f"round {round_.number} does not collect suggestions")
    checked = suggestions.check_suggestion(
        kind=kind,
        text=text,
        target_identity=target_identity,
        details=details or {},
        items={str(item.identity): item for item in round_.items.all()},
    )
    return Suggestion.objects.create(
        round=round_,
        panelist=panelist,
        kind=checked.kind,
        target_identity=checked.target_identity,
        details=checked.details,
        text=checked.text,
    )
