"""The end of a study: finishing it (with a reason when the stopping rule is not met) and
releasing the consensus taxonomy as a new version."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from delphi import services
from delphi.access import get_study_for_coordinator
from delphi.forms import ReasonForm, ReleaseForm, sentence
from delphi.services import DelphiError


@login_required
@require_POST
def finish_study(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    form = ReasonForm(request.POST)
    reason = form.cleaned_data["reason"] if form.is_valid() else ""
    try:
        study = services.finish_study(study=study, actor=request.user, reason=reason)
    except DelphiError as exc:
        messages.error(request, sentence(exc.message))
    else:
        messages.success(request, f"Study finished ({study.finished_reason}).")
    return redirect("delphi:study", study_id=study.pk)


@login_required
@require_POST
def release_taxonomy(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    form = ReleaseForm(request.POST)
    data = form.cleaned_data if form.is_valid() else {"name": "", "description": ""}
    try:
        summary = services.release_taxonomy(
            study=study, actor=request.user, name=data["name"], description=data["description"]
        )
    except DelphiError as exc:
        messages.error(request, sentence(exc.message))
    else:
        messages.success(
            request,
            f"Released {summary.version.name!r} with {summary.included} node(s); "
            f"{len(summary.excluded)} left out.",
        )
    return redirect("delphi:study", study_id=study.pk)
