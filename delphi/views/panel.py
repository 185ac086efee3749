"""The panel's round pages: the questionnaire (its no-JS save and submit) and the
suggestion form. The autosave is delphi.api.DraftApi; joining is views/join.py.

Anonymity is the rule every page here keeps: a panelist sees the panel's statistics, the
anonymous comments and their own answers, never another panelist's pseudonym, name or
individual answer. Everything a page shows comes from the questionnaire selector (which
already reduces the panel to statistics and sorted comments) or from the panelist's own rows.
"""

from __future__ import annotations

import uuid
from datetime import UTC, datetime

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, QueryDict
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_POST

from delphi import presenters, selectors, services
from delphi.access import get_panelist_for_user
from delphi.forms import questionnaire_answers, suggestion_details
from delphi.models import DelphiStudy, Panelist, PanelistRound, Round, Suggestion, TaxonomyNode
from delphi.services import DelphiError
from delphi.stats import display
from medhelm_site.common.errors import DomainError

# Statuses in which a panelist still answers the open round.
ANSWERING = (PanelistRound.Status.INVITED, PanelistRound.Status.STARTED)


def _storage_key(panelist: Panelist, round_: Round) -> str:
    return f"delphi-draft-{round_.study_id}-{round_.number}-{panelist.pk}"


def _is_open_for(round_: Round | None, entry: PanelistRound | None) -> bool:
    return round_ is not None and round_.status == Round.Status.OPEN and entry is not None


# --------------------------------------------------------------------------- rendering


def _saved_at(updated_at_ms: int) -> datetime | None:
    """When the server last kept an answer of this draft (None: nothing saved yet)."""
    return datetime.fromtimestamp(updated_at_ms / 1000, tz=UTC) if updated_at_ms else None


def _render_questionnaire(
    request: HttpRequest,
    *,
    panelist: Panelist,
    round_: Round,
    entry: PanelistRound,
    posted: QueryDict | None = None,
    errors: list[DomainError | str] | None = None,
    suggestion_posted: QueryDict | None = None,
    suggestion_errors: list[str] | None = None,
) -> HttpResponse:
    """The questionnaire, with a refused post's values and errors when there are some."""
    errors = errors or []
    suggestion_errors = suggestion_errors or []
    study = round_.study
    names = selectors.names_by_identity(round_=round_)
    rows = presenters.item_rows(
        study=study,
        entries=selectors.questionnaire(panelist=panelist, round_=round_),
        names=names,
        posted=posted,
        errors=errors,
    )
    items = [row.item for row in rows]
    updated_at_ms = selectors.draft_version_ms(panelist=panelist, round_=round_)
    if posted is not None:
        comprehensiveness = posted.get("comprehensiveness", "")
    else:
        comprehensiveness = str(entry.comprehensiveness or "")
    own = []
    if round_.collects_suggestions:
        suggestions = selectors.own_suggestions(panelist=panelist, round_=round_)
        own = presenters.own_suggestions(suggestions, names)
    context = {
        "study": study,
        "round": round_,
        "rows": rows,
        "questions": presenters.questions_of(study),
        "bands": presenters.scale_bands(study),
        "scale_question": presenters.scale_of(study)["question"],
        "categories": [item for item in items if item.kind == "category"],
        "comprehensiveness": comprehensiveness,
        "comprehensiveness_points": range(1, 6),
        "errors": presenters.error_links(rows, errors),
        "answered": presenters.answered_count(rows),
        "saved_at": _saved_at(updated_at_ms),
        "rounding_rule": display.ROUNDING_RULE,
        "has_feedback": any(row.feedback for row in rows),
        "storage_key": _storage_key(panelist, round_),
        "updated_at_ms": updated_at_ms,
        "suggestion_kinds": Suggestion.Kind.choices,
        "node_kinds": TaxonomyNode.Kind.choices,
        "suggestion_targets": items,
        "suggestion_parents": [item for item in items if item.kind != "task"],
        "suggestion": suggestion_posted or {},
        "suggestion_errors": suggestion_errors,
        "own_suggestions": own,
    }
    status = 400 if errors or suggestion_errors else 200
    return render(request, "delphi/panel_round.html", context, status=status)


def _render_done(
    request: HttpRequest, *, panelist: Panelist, round_: Round, entry: PanelistRound
) -> HttpResponse:
    """The read-only thank-you page of a submitted round: their own answers, nothing else."""
    names = selectors.names_by_identity(round_=round_)
    rows = presenters.item_rows(
        study=round_.study,
        entries=selectors.questionnaire(panelist=panelist, round_=round_),
        names=names,
        posted=None,
        errors=[],
    )
    for row in rows:
        # Shown as a name, not an id (a saved choice is always a UUID).
        if row.placement_choice:
            row.placement_choice = names.get(uuid.UUID(row.placement_choice), "?")
    suggestions = selectors.own_suggestions(panelist=panelist, round_=round_)
    return render(
        request,
        "delphi/panel_round_done.html",
        {
            "study": round_.study,
            "round": round_,
            "entry": entry,
            "rows": rows,
            "questions": presenters.questions_of(round_.study),
            "storage_key": _storage_key(panelist, round_),
            "own_suggestions": presenters.own_suggestions(suggestions, names),
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
    """Why there is nothing to answer, with a note on what a refused post did not save."""
    return render(
        request,
        "delphi/panel_round_status.html",
        {
            "study": study,
            "round": round_,
            "message": presenters.status_message(round_, entry),
            "note": note,
        },
        status=status,
    )


# --------------------------------------------------------------------------- round page


@login_required
@never_cache
def round_page(request: HttpRequest, study_id: int) -> HttpResponse:
    """The current round's questionnaire, or its status when there is nothing to answer.
    POST action=save keeps a draft (the no-JS path of autosave); action=submit saves and
    submits."""
    panelist = get_panelist_for_user(user=request.user, study_id=study_id)
    study = panelist.study
    round_ = selectors.current_round_for_panel(study=study)
    entry = selectors.panelist_round(panelist=panelist, round_=round_)
    if not _is_open_for(round_, entry):
        note = "Your last changes were not saved: the round is not open." if request.POST else ""
        return _render_status(
            request, study=study, round_=round_, entry=entry, note=note, status=409 if note else 200
        )
    if entry.status == PanelistRound.Status.SUBMITTED:
        return _render_done(request, panelist=panelist, round_=round_, entry=entry)
    if entry.status not in ANSWERING:
        return _render_status(request, study=study, round_=round_, entry=entry)
    if request.method != "POST":
        return _render_questionnaire(request, panelist=panelist, round_=round_, entry=entry)
    return _save_or_submit(request, panelist=panelist, round_=round_, entry=entry)


def _save_or_submit(
    request: HttpRequest, *, panelist: Panelist, round_: Round, entry: PanelistRound
) -> HttpResponse:
    """A posted questionnaire: always saved as a draft first, then submitted when asked, so
    that an incomplete submission keeps everything typed (submit_round rolls back as a whole
    when it refuses)."""
    answers = questionnaire_answers(
        request.POST,
        items=round_.items.all(),
        answered=selectors.answered_item_ids(panelist=panelist, round_=round_),
    )
    refused = {"panelist": panelist, "round_": round_, "entry": entry, "posted": request.POST}
    try:
        services.save_answers(
            panelist=panelist,
            round_=round_,
            answers=answers,
            comprehensiveness=request.POST.get("comprehensiveness") or None,
        )
    except DelphiError as exc:
        return _render_questionnaire(request, **refused, errors=[exc])
    if request.POST.get("action", "save") != "submit":
        messages.success(request, "Draft saved. You can come back to it at any time.")
        return redirect("delphi:panel_round", study_id=round_.study_id)
    try:
        services.submit_round(panelist=panelist, round_=round_)
    except DelphiError as exc:
        # One line per missing answer, so each can stand next to its item.
        problems = services.missing_answers(panelist=panelist, round_=round_) or [exc]
        entry.refresh_from_db()
        return _render_questionnaire(request, **refused, errors=problems)
    messages.success(request, f"Thank you: your answers to round {round_.number} are submitted.")
    return redirect("delphi:panel_round", study_id=round_.study_id)


# --------------------------------------------------------------------------- suggestions


@login_required
@require_POST
def suggest(request: HttpRequest, study_id: int) -> HttpResponse:
    """A suggestion to change the taxonomy, from the form at the end of the questionnaire."""
    panelist = get_panelist_for_user(user=request.user, study_id=study_id)
    round_ = selectors.current_round_for_panel(study=panelist.study)
    entry = selectors.panelist_round(panelist=panelist, round_=round_)
    if not _is_open_for(round_, entry):
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
    try:
        services.add_suggestion(
            panelist=panelist,
            round_=round_,
            kind=request.POST.get("kind", ""),
            text=request.POST.get("text", ""),
            target_identity=request.POST.get("target") or None,
            details=suggestion_details(request.POST),
        )
    except DelphiError as exc:
        return _render_questionnaire(
            request,
            panelist=panelist,
            round_=round_,
            entry=entry,
            suggestion_posted=request.POST,
            suggestion_errors=[exc.message],
        )
    messages.success(request, "Your suggestion is recorded; the coordinator reviews it.")
    return redirect(reverse("delphi:panel_round", kwargs={"study_id": study_id}) + "#suggestions")
