"""What the panel's pages show, laid out so that templates only draw: item rows of the
questionnaire, the feedback histogram's SVG geometry, the banded scale, a panelist's own
suggestions and the one-line status of a round that is not open.

Nothing here reads the database: the views pass in what the selectors returned.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.http import QueryDict

from delphi import protocol, selectors, stats, suggestions
from delphi.models import (
    DelphiStudy,
    PanelistRound,
    Response,
    Round,
    RoundItem,
    RoundItemStatistics,
    Suggestion,
)
from medhelm_site.common.errors import DomainError

BAR_SLOT = 30
BAR_WIDTH = 22
BAR_MAX_HEIGHT = 80


# --------------------------------------------------------------------------- histogram


@dataclass(frozen=True)
class Bar:
    point: int
    count: int
    band: str  # low | mid | high, the RAND/UCLA band that colours the bar
    fill: str
    x: int
    cx: int  # the bar's centre, for its labels
    y: str  # SVG coordinates as text, so no locale ever writes "53,3"
    height: str
    own: bool
    marker: str  # the path of the "your answer" triangle under the bar


@dataclass(frozen=True)
class Histogram:
    """An inline SVG histogram of ratings 1-9, laid out here so the template only draws."""

    bars: list[Bar]
    description: str  # the same numbers as text, for screen readers
    width: int = 270
    height: int = 132
    baseline: int = 100
    bar_width: int = 22
    label_y: int = 114
    count_dy: int = -3


def histogram(statistics: RoundItemStatistics, own_rating: int | None) -> Histogram:
    counts = {point: int(statistics.counts.get(str(point), 0)) for point in range(1, 10)}
    tallest = max(counts.values()) or 1
    bars = []
    for point, count in counts.items():
        height = BAR_MAX_HEIGHT * count / tallest
        x = (point - 1) * BAR_SLOT + (BAR_SLOT - BAR_WIDTH) // 2
        cx = x + BAR_WIDTH // 2
        bars.append(
            Bar(
                point=point,
                count=count,
                band=stats.band_of(point),
                # Inline fills, so the histogram reads right where the stylesheet did not load.
                fill=stats.BAND_COLOURS[stats.band_of(point)],
                x=x,
                cx=cx,
                y=f"{100 - height:.1f}",
                height=f"{height:.1f}",
                own=point == own_rating,
                marker=f"M{cx - 6} 130 L{cx + 6} 130 L{cx} 120 Z",
            )
        )
    description = "Ratings: " + ", ".join(
        f"{count} rated {point}" for point, count in counts.items()
    )
    return Histogram(bars=bars, description=description)


# --------------------------------------------------------------------------- protocol


def scale_of(study: DelphiStudy) -> dict[str, Any]:
    """The 1-9 scale as the locked protocol states it (the default before locking)."""
    return (study.protocol_document or {}).get("scale") or protocol.SCALE


def scale_bands(study: DelphiStudy) -> list[dict[str, Any]]:
    """The 1-9 scale grouped by its bands, as the locked protocol states them."""
    bands = []
    for span, label in scale_of(study)["bands"].items():
        low, high = (int(part) for part in span.split("-"))
        bands.append(
            {
                "span": span,
                "label": label,
                "band": stats.band_of(low),
                "points": range(low, high + 1),
            }
        )
    return bands


def questions_of(study: DelphiStudy) -> dict[str, Any]:
    """The questions put to the panel: the locked document is what the panel was promised;
    the live field counts only before locking."""
    document = study.protocol_document or {}
    return protocol.validate_questions(document.get("questions", study.questions))


# --------------------------------------------------------------------------- item rows


@dataclass(frozen=True)
class FeedbackView:
    round_number: int
    statistics: RoundItemStatistics
    histogram: Histogram
    own_rating: int | None
    own_unable: bool
    comments: list[str]


@dataclass
class ItemRow:
    entry: selectors.QuestionnaireItem
    parent_name: str
    placement: str  # "agree", "choose" or "" (not asked for this item)
    feedback: FeedbackView | None
    iqr: tuple[float, float] | None  # set only when a reason is asked outside it
    rating: str = ""
    unable: bool = False
    placement_agrees: str = ""  # "yes" | "no" | ""
    placement_choice: str = ""
    comment: str = ""
    reason: str = ""
    errors: list[str] = field(default_factory=list)

    @property
    def item(self) -> RoundItem:
        return self.entry.item

    @property
    def reason_needed(self) -> bool:
        if self.iqr is None or not self.rating.isdigit():
            return False
        return not self.iqr[0] <= int(self.rating) <= self.iqr[1]


def saved_values(response: Response | None) -> dict[str, Any]:
    """A saved response as the questionnaire's field values."""
    if response is None:
        return {}
    return {
        "rating": "" if response.rating is None else str(response.rating),
        "unable": response.unable_to_rate,
        "placement_agrees": {True: "yes", False: "no", None: ""}[response.placement_agrees],
        "placement_choice": str(response.placement_choice or ""),
        "comment": response.comment,
        "reason": response.reason_outside_iqr,
    }


def posted_values(data: QueryDict, item: RoundItem) -> dict[str, Any]:
    """The field values a refused form post carried for one item, to show them again."""
    prefix = f"item-{item.pk}-"
    return {
        "rating": data.get(prefix + "rating", ""),
        "unable": data.get(prefix + "unable") in ("on", "1", "true"),
        "placement_agrees": data.get(prefix + "placement_agrees", ""),
        "placement_choice": data.get(prefix + "placement_choice", ""),
        "comment": data.get(prefix + "comment", ""),
        "reason": data.get(prefix + "reason", ""),
    }


def errors_for(item: RoundItem, errors: Sequence[DomainError | str]) -> list[str]:
    """The problems that belong next to one item.

    A DelphiError is placed by its field (`answers.<item id>`, or a sub-field of it such as
    `answers.<item id>.rating`). A plain line comes from `services.missing_answers`, which
    lists one problem per line and starts each with the item's name.
    """
    own = f"answers.{item.pk}"
    placed = []
    for error in errors:
        if isinstance(error, DomainError):
            if error.field and (error.field == own or error.field.startswith(own + ".")):
                placed.append(error.message)
        elif error.startswith(f"{item.name}: "):
            placed.append(error)
    return placed


def _placement(questions: Mapping[str, Any], item: RoundItem) -> str:
    if questions["placement"] == "agree" and item.kind != "category":
        return "agree"
    if questions["placement"] == "choose" and item.kind == "subcategory":
        return "choose"
    return ""


def _feedback(entry: selectors.QuestionnaireItem) -> FeedbackView | None:
    if entry.feedback is None:
        return None
    return FeedbackView(
        round_number=entry.feedback.round_number,
        statistics=entry.feedback.statistics,
        histogram=histogram(entry.feedback.statistics, entry.feedback.own_rating),
        own_rating=entry.feedback.own_rating,
        own_unable=entry.feedback.own_unable,
        comments=entry.feedback.comments,
    )


def item_rows(
    *,
    study: DelphiStudy,
    entries: Iterable[selectors.QuestionnaireItem],
    names: Mapping[uuid.UUID, str],
    posted: QueryDict | None,
    errors: Sequence[DomainError | str],
) -> list[ItemRow]:
    """One row per questionnaire item: what it asks, the feedback, and the values to show
    (the refused post's when there is one, else the saved answer)."""
    questions = questions_of(study)
    rows = []
    for entry in entries:
        item = entry.item
        feedback = _feedback(entry)
        iqr = None
        if (
            study.ask_reason_outside_iqr
            and feedback is not None
            and feedback.statistics.q1 is not None
            and feedback.statistics.q3 is not None
        ):
            iqr = (feedback.statistics.q1, feedback.statistics.q3)
        values = posted_values(posted, item) if posted is not None else saved_values(entry.response)
        rows.append(
            ItemRow(
                entry=entry,
                parent_name=names.get(item.parent_identity, "") if item.parent_identity else "",
                placement=_placement(questions, item),
                feedback=feedback,
                iqr=iqr,
                errors=errors_for(item, errors),
                **values,
            )
        )
    return rows


def messages_of(errors: Sequence[DomainError | str]) -> list[str]:
    """The errors as the lines shown at the top of the questionnaire."""
    return [error.message if isinstance(error, DomainError) else error for error in errors]


@dataclass(frozen=True)
class ErrorLink:
    """One line of the questionnaire's error summary and the question it is about."""

    text: str
    anchor: str  # the id of the item's section (or of the comprehensiveness question), or ""


COMPREHENSIVENESS_ANCHOR = "comprehensiveness"


def error_links(rows: Sequence[ItemRow], errors: Sequence[DomainError | str]) -> list[ErrorLink]:
    """The error summary: each line links to the question it is about (the item whose row
    shows it; the comprehensiveness question for its own line), in the order given."""
    links = []
    for text in messages_of(errors):
        anchor = next((f"item-{row.item.pk}" for row in rows if text in row.errors), "")
        if not anchor and text.startswith("comprehensiveness"):
            anchor = COMPREHENSIVENESS_ANCHOR
        links.append(ErrorLink(text=text, anchor=anchor))
    return links


def answered_count(rows: Sequence[ItemRow]) -> int:
    """Items with a rating or "unable to rate": what "x of n answered" counts (the
    questionnaire's script counts the same way as the panelist answers)."""
    return sum(1 for row in rows if row.rating or row.unable)


# --------------------------------------------------------------------------- suggestions


def suggestion_summary(suggestion: Suggestion, names: Mapping[uuid.UUID, str]) -> str:
    """A panelist's own suggestion in words, for the list under the questionnaire (the
    target is shown beside it)."""
    by_text = {str(identity): name for identity, name in names.items()}
    return suggestions.describe_suggestion(suggestion, by_text, mention_target=False)


def own_suggestions(
    suggestions: Iterable[Suggestion], names: Mapping[uuid.UUID, str]
) -> list[dict[str, Any]]:
    """The panelist's own suggestions, each with its target's name and a summary."""
    return [
        {
            "suggestion": suggestion,
            "target": names.get(suggestion.target_identity, "")
            if suggestion.target_identity
            else "",
            "summary": suggestion_summary(suggestion, names),
        }
        for suggestion in suggestions
    ]


# --------------------------------------------------------------------------- status


def status_message(round_: Round | None, entry: PanelistRound | None) -> str:
    """Why there is nothing to answer: the round's (or the panelist's) status in one line."""
    if round_ is None:
        return "No round has opened yet. You will get an e-mail when the first round opens."
    if round_.status == Round.Status.OPEN:
        if entry is None:
            return (
                f"Round {round_.number} is open, but you are not on its list: ask the "
                "coordinator to add you."
            )
        return f"Round {round_.number} is closed for you ({entry.get_status_display().lower()})."
    if round_.status == Round.Status.FEEDBACK_RELEASED:
        return (
            f"Round {round_.number} has ended and its feedback is released; you will see it "
            "with the next round when it opens."
        )
    if round_.status in (Round.Status.CLOSED, Round.Status.ANALYSED):
        return (
            f"Round {round_.number} is {round_.get_status_display().lower()}: the coordinator "
            "is preparing the panel's feedback."
        )
    return f"Round {round_.number} is {round_.get_status_display().lower()}."
