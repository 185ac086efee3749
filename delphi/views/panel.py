"""The panel's pages: joining by a one-time invitation link, the round questionnaire, its
autosave endpoint and the suggestion form.

Anonymity is the rule every page here keeps: a panelist sees the panel's statistics, the
anonymous comments and their own answers, never another panelist's pseudonym, name or
individual answer. Everything a page shows comes from the questionnaire selector (which
already reduces the panel to statistics and sorted comments) or from the panelist's own rows.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.contrib.auth import login
from django.contrib.auth.decorators import login_required
from django.db.models import Max
from django.http import HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils import timezone
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from delphi import protocol, selectors, services
from delphi.access import get_panelist_for_user
from delphi.models import (
    DelphiStudy,
    Panelist,
    PanelistRound,
    Response,
    Round,
    RoundItem,
    RoundItemStatistics,
    Suggestion,
    TaxonomyNode,
)
from delphi.services import DelphiError

ANSWER_FIELDS = ("rating", "unable", "placement_agrees", "placement_choice", "comment", "reason")
DRAFT_KEYS = {"answers", "comprehensiveness", "round"}
# Statuses in which a panelist still answers the open round.
ANSWERING = (PanelistRound.Status.INVITED, PanelistRound.Status.STARTED)


# --------------------------------------------------------------------------- join


def _join_response(request: HttpRequest, template: str, context: dict, status: int) -> HttpResponse:
    response = render(request, template, context, status=status)
    # The token is in the URL: no Referer may carry it to another site; the link is
    # personal. Not "no-referrer": Chromium then posts the join form with "Origin: null",
    # which Django's CSRF origin check refuses (found by the browser test of a whole study).
    response.headers["Referrer-Policy"] = "same-origin"
    return response


@never_cache
def join(request: HttpRequest, token: str) -> HttpResponse:
    """A one-time invitation link: join as the logged-in user, or create an account."""
    panelist = services.panelist_for_token(token)
    if panelist is None:
        return _join_response(request, "delphi/panel_join_invalid.html", {}, status=404)
    study = panelist.study
    errors: list[str] = []
    username = ""
    if request.method == "POST":
        action = request.POST.get("action", "")
        try:
            if action == "join":
                if not request.user.is_authenticated:
                    raise DelphiError("log in first, or create an account below")
                services.accept_invitation(token=token, user=request.user)
            elif action == "create":
                if request.user.is_authenticated:
                    raise DelphiError(
                        f"you are logged in as {request.user.get_username()}: join as that "
                        "account, or log out first to create another"
                    )
                username = request.POST.get("username", "").strip()
                password = request.POST.get("password1", "")
                if password != request.POST.get("password2", ""):
                    raise DelphiError("password: the two passwords differ")
                joined = services.create_account_and_accept(
                    token=token, username=username, password=password
                )
                login(request, joined.user)
            else:
                raise DelphiError("choose how to join: with your account or a new one")
        except DelphiError as exc:
            errors = [str(exc)]
        else:
            messages.success(request, f"You joined the panel of “{study.title}”.")
            return redirect("delphi:panel_round", study_id=study.pk)
    return _join_response(
        request,
        "delphi/panel_join.html",
        {"study": study, "errors": errors, "username": username},
        status=400 if errors else 200,
    )


# --------------------------------------------------------------------------- view models


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


# The RAND/UCLA bands' colours, also in panel.css (.band-low ...); inline in the SVG so the
# histogram reads right even where the stylesheet did not load.
BAND_FILLS = {"low": "#c0504d", "mid": "#d9a21b", "high": "#2e8b57"}
BAR_SLOT = 30
BAR_WIDTH = 22
BAR_MAX_HEIGHT = 80


def _band(point: int) -> str:
    return "low" if point <= 3 else "mid" if point <= 6 else "high"


def _histogram(statistics: RoundItemStatistics, own_rating: int | None) -> Histogram:
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
                band=_band(point),
                fill=BAND_FILLS[_band(point)],
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


def _scale_bands(study: DelphiStudy) -> list[dict[str, Any]]:
    """The 1-9 scale grouped by its bands, as the locked protocol states them."""
    scale = (study.protocol_document or {}).get("scale") or protocol.SCALE
    bands = []
    for span, label in scale["bands"].items():
        low, high = (int(part) for part in span.split("-"))
        bands.append(
            {"span": span, "label": label, "band": _band(low), "points": range(low, high + 1)}
        )
    return bands


def _questions(study: DelphiStudy) -> dict[str, Any]:
    # The locked document is what the panel was promised; the live field only before locking.
    document = study.protocol_document or {}
    return protocol.validate_questions(document.get("questions", study.questions))


def _names_by_identity(round_: Round) -> dict[uuid.UUID, str]:
    """The name of every node an item of this round may point at (its parent, a category):
    the draft taxonomy first, then the wording of the latest round that put it to the panel,
    because a parent may not be rated (rate_kinds) or may have left after consensus."""
    names = dict(round_.study.draft_taxonomy.nodes.values_list("identity", "name"))
    for identity, name in (
        RoundItem.objects.filter(round__study=round_.study, round__number__lte=round_.number)
        .order_by("round__number", "id")
        .values_list("identity", "name")
    ):
        names[identity] = name
    return names


def _saved_values(response: Response | None) -> dict[str, Any]:
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


def _posted_values(data: QueryDict, item: RoundItem) -> dict[str, Any]:
    prefix = f"item-{item.pk}-"
    return {
        "rating": data.get(prefix + "rating", ""),
        "unable": data.get(prefix + "unable") in ("on", "1", "true"),
        "placement_agrees": data.get(prefix + "placement_agrees", ""),
        "placement_choice": data.get(prefix + "placement_choice", ""),
        "comment": data.get(prefix + "comment", ""),
        "reason": data.get(prefix + "reason", ""),
    }


def _answers_from_form(data: QueryDict, round_: Round, panelist: Panelist) -> dict[str, Any]:
    """The answers a normal (no-JS) form post carries, in the services' answer shape.

    Only items the panelist touched (or saved before, so that clearing a field counts) are
    sent: an untouched item must not become an empty response row.
    """
    saved = set(
        Response.objects.filter(panelist=panelist, round_item__round=round_).values_list(
            "round_item_id", flat=True
        )
    )
    answers: dict[str, Any] = {}
    for item in round_.items.all():
        prefix = f"item-{item.pk}-"
        raw = {key: data.get(prefix + key, "") for key in ANSWER_FIELDS}
        if raw["unable"]:
            # Without JS a chosen radio cannot be cleared, so "unable to rate" wins over it
            # (with JS the page unticks the rating itself).
            raw["rating"] = ""
        if item.pk in saved or any(str(value).strip() for value in raw.values()):
            answers[str(item.pk)] = raw
    return answers


def _errors_for(item: RoundItem, errors: list[str]) -> list[str]:
    # Service messages name items as "<name>: ..." (missing answers) or "answers['<name>']"
    # (answers that do not parse).
    return [
        error
        for error in errors
        if error.startswith(f"{item.name}: ") or f"answers[{item.name!r}]" in error
    ]


def _draft_version_ms(*, panelist: Panelist, round_: Round) -> int:
    """The server's version of this panelist's draft: when a response of theirs last changed.
    The page's localStorage copy is tied to it (see questionnaire.js)."""
    latest = Response.objects.filter(panelist=panelist, round_item__round=round_).aggregate(
        latest=Max("updated_at")
    )["latest"]
    return int(latest.timestamp() * 1000) if latest else 0


def _storage_key(panelist: Panelist, round_: Round) -> str:
    return f"delphi-draft-{round_.study_id}-{round_.number}-{panelist.pk}"


def _rows(
    *,
    panelist: Panelist,
    round_: Round,
    posted: QueryDict | None,
    errors: list[str],
) -> list[ItemRow]:
    study = round_.study
    questions = _questions(study)
    names = _names_by_identity(round_)
    rows = []
    for entry in selectors.questionnaire(panelist=panelist, round_=round_):
        item = entry.item
        feedback = None
        if entry.feedback is not None:
            statistics = entry.feedback.statistics
            feedback = FeedbackView(
                round_number=entry.feedback.round_number,
                statistics=statistics,
                histogram=_histogram(statistics, entry.feedback.own_rating),
                own_rating=entry.feedback.own_rating,
                own_unable=entry.feedback.own_unable,
                comments=entry.feedback.comments,
            )
        placement = ""
        if questions["placement"] == "agree" and item.kind != "category":
            placement = "agree"
        elif questions["placement"] == "choose" and item.kind == "subcategory":
            placement = "choose"
        iqr = None
        if (
            study.ask_reason_outside_iqr
            and feedback is not None
            and feedback.statistics.q1 is not None
            and feedback.statistics.q3 is not None
        ):
            iqr = (feedback.statistics.q1, feedback.statistics.q3)
        values = (
            _posted_values(posted, item) if posted is not None else _saved_values(entry.response)
        )
        rows.append(
            ItemRow(
                entry=entry,
                parent_name=names.get(item.parent_identity, "") if item.parent_identity else "",
                placement=placement,
                feedback=feedback,
                iqr=iqr,
                errors=_errors_for(item, errors),
                **values,
            )
        )
    return rows


def _own_suggestions(
    *, panelist: Panelist, round_: Round, names: dict[uuid.UUID, str]
) -> list[dict[str, Any]]:
    """The panelist's own suggestions of this round, each with a readable summary."""
    listed = []
    for suggestion in panelist.suggestions.filter(round=round_).order_by("created_at", "id"):
        details = suggestion.details

        def name_of(key: str, details: dict[str, Any] = details) -> str:
            try:
                return names.get(uuid.UUID(str(details.get(key, ""))), "?")
            except ValueError:
                return "?"

        if suggestion.kind == Suggestion.Kind.ADD:
            where = f" under {name_of('parent_identity')}" if details.get("parent_identity") else ""
            summary = f"add the {details.get('kind', 'subcategory')} “{details.get('name')}”{where}"
        elif suggestion.kind == Suggestion.Kind.RENAME:
            summary = f"rename to “{details.get('name')}”"
        elif suggestion.kind == Suggestion.Kind.MOVE:
            summary = f"move under {name_of('parent_identity')}"
        elif suggestion.kind == Suggestion.Kind.MERGE:
            summary = f"merge into {name_of('into_identity')}"
        else:
            summary = "delete"
        listed.append(
            {
                "suggestion": suggestion,
                "target": names.get(suggestion.target_identity, "")
                if suggestion.target_identity
                else "",
                "summary": summary,
            }
        )
    return listed


def _panelist_round(panelist: Panelist, round_: Round | None) -> PanelistRound | None:
    if round_ is None:
        return None
    return PanelistRound.objects.filter(panelist=panelist, round=round_).first()


def _status_message(round_: Round | None, entry: PanelistRound | None) -> str:
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


# --------------------------------------------------------------------------- round page


def _render_questionnaire(
    request: HttpRequest,
    *,
    panelist: Panelist,
    round_: Round,
    entry: PanelistRound,
    posted: QueryDict | None = None,
    errors: list[str] | None = None,
    suggestion_posted: QueryDict | None = None,
    suggestion_errors: list[str] | None = None,
) -> HttpResponse:
    errors = errors or []
    suggestion_errors = suggestion_errors or []
    study = round_.study
    questions = _questions(study)
    names = _names_by_identity(round_)
    rows = _rows(panelist=panelist, round_=round_, posted=posted, errors=errors)
    items = [row.item for row in rows]
    comprehensiveness = (
        posted.get("comprehensiveness", "")
        if posted is not None
        else str(entry.comprehensiveness or "")
    )
    context = {
        "study": study,
        "round": round_,
        "rows": rows,
        "questions": questions,
        "bands": _scale_bands(study),
        "scale_question": ((study.protocol_document or {}).get("scale") or protocol.SCALE)[
            "question"
        ],
        "categories": [item for item in items if item.kind == "category"],
        "comprehensiveness": comprehensiveness,
        "comprehensiveness_points": range(1, 6),
        "errors": errors,
        "has_feedback": any(row.feedback for row in rows),
        "storage_key": _storage_key(panelist, round_),
        "updated_at_ms": _draft_version_ms(panelist=panelist, round_=round_),
        "suggestion_kinds": Suggestion.Kind.choices,
        "node_kinds": TaxonomyNode.Kind.choices,
        "suggestion_targets": items,
        "suggestion_parents": [item for item in items if item.kind != "task"],
        "suggestion": suggestion_posted or {},
        "suggestion_errors": suggestion_errors,
        "own_suggestions": _own_suggestions(panelist=panelist, round_=round_, names=names)
        if round_.collects_suggestions
        else [],
    }
    status = 400 if errors or suggestion_errors else 200
    return render(request, "delphi/panel_round.html", context, status=status)


def _render_done(
    request: HttpRequest, *, panelist: Panelist, round_: Round, entry: PanelistRound
) -> HttpResponse:
    """The read-only thank-you page of a submitted round: their own answers, nothing else."""
    names = _names_by_identity(round_)
    rows = _rows(panelist=panelist, round_=round_, posted=None, errors=[])
    for row in rows:
        # Shown as a name, not an id.
        if row.placement_choice:
            row.placement_choice = names.get(uuid.UUID(row.placement_choice), "?")
    return render(
        request,
        "delphi/panel_round_done.html",
        {
            "study": round_.study,
            "round": round_,
            "entry": entry,
            "rows": rows,
            "questions": _questions(round_.study),
            "storage_key": _storage_key(panelist, round_),
            "own_suggestions": _own_suggestions(panelist=panelist, round_=round_, names=names),
        },
    )


def _render_status(
    request: HttpRequest,
    *,
    study: DelphiStudy,
    round_: Round | None,
    entry: PanelistRound | None,
    note: str = "",
    status: int = 200,
) -> HttpResponse:
    return render(
        request,
        "delphi/panel_round_status.html",
        {
            "study": study,
            "round": round_,
            "message": _status_message(round_, entry),
            "note": note,
        },
        status=status,
    )


@login_required
@never_cache
def round_page(request: HttpRequest, study_id: int) -> HttpResponse:
    """The current round's questionnaire. POST action=save keeps a draft (the no-JS path of
    autosave); action=submit saves and submits."""
    panelist = get_panelist_for_user(user=request.user, study_id=study_id)
    study = panelist.study
    round_ = selectors.current_round_for_panel(study=study)
    entry = _panelist_round(panelist, round_)
    if round_ is None or round_.status != Round.Status.OPEN or entry is None:
        note = "Your last changes were not saved: the round is not open." if request.POST else ""
        return _render_status(
            request,
            study=study,
            round_=round_,
            entry=entry,
            note=note,
            status=409 if note else 200,
        )
    if entry.status == PanelistRound.Status.SUBMITTED:
        return _render_done(request, panelist=panelist, round_=round_, entry=entry)
    if entry.status not in ANSWERING:
        return _render_status(request, study=study, round_=round_, entry=entry)
    if request.method != "POST":
        return _render_questionnaire(request, panelist=panelist, round_=round_, entry=entry)

    action = request.POST.get("action", "save")
    answers = _answers_from_form(request.POST, round_, panelist)
    comprehensiveness = request.POST.get("comprehensiveness") or None
    try:
        # Saved first even when submitting, so that an incomplete submission keeps
        # everything typed (submit_round rolls back as a whole when it refuses).
        services.save_answers(
            panelist=panelist,
            round_=round_,
            answers=answers,
            comprehensiveness=comprehensiveness,
        )
    except DelphiError as exc:
        return _render_questionnaire(
            request,
            panelist=panelist,
            round_=round_,
            entry=entry,
            posted=request.POST,
            errors=[str(exc)],
        )
    if action != "submit":
        messages.success(request, "Draft saved. You can come back to it at any time.")
        return redirect("delphi:panel_round", study_id=study.pk)
    try:
        services.submit_round(panelist=panelist, round_=round_)
    except DelphiError as exc:
        # One line per missing answer, so each can stand next to its item.
        problems = services.missing_answers(panelist=panelist, round_=round_) or [str(exc)]
        entry.refresh_from_db()
        return _render_questionnaire(
            request,
            panelist=panelist,
            round_=round_,
            entry=entry,
            posted=request.POST,
            errors=problems,
        )
    messages.success(request, f"Thank you: your answers to round {round_.number} are submitted.")
    return redirect("delphi:panel_round", study_id=study.pk)


# --------------------------------------------------------------------------- autosave


def _json_error(message: str, status: int) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


@never_cache
def draft(request: HttpRequest, study_id: int) -> HttpResponse:
    """Autosave: POST {"round": n, "answers": {round_item_id: answer}, "comprehensiveness": n}.

    Returns {saved_at, updated_at_ms}; a bad answer saves nothing and answers 400 with the
    service's message, which names the item.
    """
    if not request.user.is_authenticated:
        # JSON, not a redirect to the login page: fetch() would follow it and see a 200.
        return _json_error(
            "you are logged out: log in again; your answers stay in this browser", 401
        )
    if request.method != "POST":
        response = _json_error("POST the answers as JSON", 405)
        response.headers["Allow"] = "POST"
        return response
    panelist = get_panelist_for_user(user=request.user, study_id=study_id)
    try:
        payload = json.loads(request.body or b"null")
    except (ValueError, UnicodeDecodeError):
        return _json_error("the body is not JSON", 400)
    if not isinstance(payload, dict):
        return _json_error("the body must be a JSON object with answers", 400)
    unknown = set(payload) - DRAFT_KEYS
    if unknown:
        return _json_error(f"unknown key(s) {sorted(unknown)}; allowed: {sorted(DRAFT_KEYS)}", 400)
    answers = payload.get("answers", {})
    if not isinstance(answers, dict):
        return _json_error("answers: must be an object keyed by item id", 400)
    round_ = selectors.current_round_for_panel(study=panelist.study)
    if round_ is None:
        return _json_error("no round is open", 409)
    if "round" in payload and payload["round"] != round_.number:
        # The page is older than the round: its item ids belong to another round.
        return _json_error(
            f"round {payload['round']} is no longer the current round: reload the page", 409
        )
    try:
        services.save_answers(
            panelist=panelist,
            round_=round_,
            answers=answers,
            comprehensiveness=payload.get("comprehensiveness"),
        )
    except DelphiError as exc:
        return _json_error(str(exc), 400)
    return JsonResponse(
        {
            "saved_at": timezone.now().isoformat(),
            "updated_at_ms": _draft_version_ms(panelist=panelist, round_=round_),
        }
    )


# --------------------------------------------------------------------------- suggestions

SUGGESTION_FIELDS = {
    # form field -> details key, per kind; the service refuses keys a kind does not take.
    Suggestion.Kind.ADD: {
        "name": "name",
        "new_kind": "kind",
        "parent": "parent_identity",
        "description": "description",
    },
    Suggestion.Kind.RENAME: {"name": "name"},
    Suggestion.Kind.MOVE: {"parent": "parent_identity"},
    Suggestion.Kind.MERGE: {"into": "into_identity"},
    Suggestion.Kind.DELETE: {},
}


@login_required
@require_POST
def suggest(request: HttpRequest, study_id: int) -> HttpResponse:
    """A suggestion to change the taxonomy, from the form at the end of the questionnaire."""
    panelist = get_panelist_for_user(user=request.user, study_id=study_id)
    round_ = selectors.current_round_for_panel(study=panelist.study)
    entry = _panelist_round(panelist, round_)
    if round_ is None or round_.status != Round.Status.OPEN or entry is None:
        return _render_status(
            request,
            study=panelist.study,
            round_=round_,
            entry=entry,
            note="Your suggestion was not saved: the round is not open.",
            status=409,
        )
    if entry.status not in ANSWERING:
        # Submitted (or withdrawn): the round's answers, suggestions included, are final.
        messages.error(
            request,
            f"Your suggestion was not saved: round {round_.number} is final for you "
            f"({entry.get_status_display().lower()}).",
        )
        return redirect("delphi:panel_round", study_id=study_id)
    kind = request.POST.get("kind", "")
    fields = SUGGESTION_FIELDS.get(kind, {})
    details = {key: request.POST.get(name, "").strip() for name, key in fields.items()}
    # A category is added without a parent; the form still shows the parent select.
    if kind == Suggestion.Kind.ADD and details.get("kind") == "category":
        details.pop("parent_identity", None)
    try:
        services.add_suggestion(
            panelist=panelist,
            round_=round_,
            kind=kind,
            text=request.POST.get("text", ""),
            target_identity=request.POST.get("target") or None,
            details=details,
        )
    except DelphiError as exc:
        return _render_questionnaire(
            request,
            panelist=panelist,
            round_=round_,
            entry=entry,
            suggestion_posted=request.POST,
            suggestion_errors=[str(exc)],
        )
    messages.success(request, "Your suggestion is recorded; the coordinator reviews it.")
    return redirect(reverse("delphi:panel_round", kwargs={"study_id": study_id}) + "#suggestions")
