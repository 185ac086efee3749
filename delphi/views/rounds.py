"""The coordinator's round pages: a round's statistics, responses and suggestions, and one
POST per round action (open, remind, close, analyse, release feedback, triage a suggestion,
draft the next round)."""

from __future__ import annotations

from collections.abc import Callable

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from delphi import selectors, services, stats
from delphi.access import get_study_for_coordinator
from delphi.forms import OpenRoundForm, TriageForm, sentence
from delphi.models import Round, Suggestion
from delphi.services import DelphiError
from delphi.suggestions import describe_suggestion
from delphi.views.coordinator import back, base_url, form_problems, round_of


@login_required
def round_page(request: HttpRequest, study_id: int, number: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    round_ = round_of(study, number)
    statistics = selectors.round_statistics(round_=round_)
    names = {str(row.item.identity): row.item.name for row in statistics.rows}
    suggestions = [
        (s, describe_suggestion(s, names))
        for s in round_.suggestions.select_related("panelist", "triaged_by").order_by("id")
    ]
    next_exists = study.rounds.filter(number=number + 1).exists()
    protocol_statistics = (study.protocol_document or {}).get("statistics", {})
    return render(
        request,
        "delphi/round.html",
        {
            "study": study,
            "round": round_,
            "rows": statistics.rows,
            "groups": statistics.groups,
            "analysed": round_.status in (Round.Status.ANALYSED, Round.Status.FEEDBACK_RELEASED),
            "min_group": protocol_statistics.get(
                "min_group_raters", stats.DEFAULT_MIN_GROUP_RATERS
            ),
            "entries": round_.panelist_rounds.select_related("panelist").order_by(
                "panelist__pseudonym"
            ),
            "suggestions": suggestions,
            "can_triage": not next_exists
            and round_.status not in (Round.Status.DRAFT, Round.Status.OPEN),
            "open_form": OpenRoundForm(),
        },
    )


def _round_action(
    request: HttpRequest, study_id: int, number: int, act: Callable[[Round], str]
) -> HttpResponse:
    """Run `act(round_)` for a round action; its return value is the success message, a
    DelphiError it raises the error message."""
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    round_ = round_of(study, number)
    try:
        message = act(round_)
    except DelphiError as exc:
        messages.error(request, sentence(exc.message))
    else:
        messages.success(request, message)
    return back(request, reverse("delphi:round_detail", args=[study.pk, number]))


@login_required
@require_POST
def open_round(request: HttpRequest, study_id: int, number: int) -> HttpResponse:
    form = OpenRoundForm(request.POST)

    def act(round_: Round) -> str:
        if not form.is_valid():
            raise DelphiError(form_problems(form))
        services.open_round(
            round_=round_,
            actor=request.user,
            base_url=base_url(request),
            closes_at=form.cleaned_data["closes_at"],
        )
        return f"Round {round_.number} is open; joined panelists were told by e-mail."

    return _round_action(request, study_id, number, act)


@login_required
@require_POST
def send_reminders(request: HttpRequest, study_id: int, number: int) -> HttpResponse:
    def act(round_: Round) -> str:
        count = services.send_reminders(
            round_=round_, actor=request.user, base_url=base_url(request)
        )
        return f"Reminders sent to {count} panelist(s) who have not submitted."

    return _round_action(request, study_id, number, act)


@login_required
@require_POST
def close_round(request: HttpRequest, study_id: int, number: int) -> HttpResponse:
    def act(round_: Round) -> str:
        services.close_round(round_=round_, actor=request.user)
        return f"Round {round_.number} closed; who did not submit is a non-responder."

    return _round_action(request, study_id, number, act)


@login_required
@require_POST
def analyse_round(request: HttpRequest, study_id: int, number: int) -> HttpResponse:
    def act(round_: Round) -> str:
        services.analyse_round(round_=round_, actor=request.user)
        return f"Round {round_.number} analysed under the locked consensus rule."

    return _round_action(request, study_id, number, act)


@login_required
@require_POST
def release_feedback(request: HttpRequest, study_id: int, number: int) -> HttpResponse:
    def act(round_: Round) -> str:
        services.release_feedback(round_=round_, actor=request.user)
        return f"The feedback of round {round_.number} is visible to the panel."

    return _round_action(request, study_id, number, act)


@login_required
@require_POST
def triage_suggestion(
    request: HttpRequest, study_id: int, number: int, suggestion_id: int
) -> HttpResponse:
    form = TriageForm(request.POST)

    def act(round_: Round) -> str:
        suggestion = get_object_or_404(Suggestion, round=round_, pk=suggestion_id)
        if not form.is_valid():
            raise DelphiError(form_problems(form))
        suggestion = services.triage_suggestion(
            suggestion=suggestion,
            actor=request.user,
            accept=form.cleaned_data["decision"] == "accept",
            reason=form.cleaned_data["reason"],
        )
        return f"Suggestion {suggestion.get_status_display().lower()}."

    return _round_action(request, study_id, number, act)


@login_required
@require_POST
def start_next_round(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    try:
        round_ = services.start_next_round(study=study, actor=request.user)
    except DelphiError as exc:
        messages.error(request, sentence(exc.message))
        return redirect("delphi:study", study_id=study.pk)
    messages.success(
        request, f"Round {round_.number} drafted with {round_.items.count()} item(s); open it."
    )
    return redirect("delphi:round_detail", study_id=study.pk, number=round_.number)
