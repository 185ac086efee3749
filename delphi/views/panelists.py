"""The coordinator's panel page: invite panelists, see who joined and answered each round,
renew an invitation link, withdraw a panelist."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from delphi import selectors, services
from delphi.access import get_study_for_coordinator
from delphi.forms import InviteForm, ReasonForm, sentence
from delphi.models import DelphiStudy, Panelist
from delphi.services import DelphiError
from delphi.views.coordinator import base_url


@login_required
def panel_page(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    form = InviteForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            panelist, _token = services.invite_panelist(
                study=study,
                actor=request.user,
                email=form.cleaned_data["email"],
                base_url=base_url(request),
                stakeholder_group=form.cleaned_data["stakeholder_group"],
                specialty=form.cleaned_data["specialty"],
            )
        except DelphiError as exc:
            form.add_error("email", sentence(exc.message))
        else:
            messages.success(
                request,
                f"{panelist.email} invited as {panelist.pseudonym}; the one-time link is on "
                "its way by e-mail.",
            )
            return redirect("delphi:panelists", study_id=study.pk)
    table = selectors.panel_table(study=study)
    return render(
        request,
        "delphi/panelists.html",
        {
            "study": study,
            "form": form,
            "rows": table.rows,
            "rounds": table.rounds,
            "counts": selectors.panel_counts(study=study),
            "can_invite": study.status
            not in (DelphiStudy.Status.FINISHED, DelphiStudy.Status.RELEASED),
        },
    )


def _panelist_of(study: DelphiStudy, panelist_id: int) -> Panelist:
    return get_object_or_404(Panelist, study=study, pk=panelist_id)


@login_required
@require_POST
def renew_invitation(request: HttpRequest, study_id: int, panelist_id: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    panelist = _panelist_of(study, panelist_id)
    try:
        services.renew_invitation(panelist=panelist, actor=request.user, base_url=base_url(request))
    except DelphiError as exc:
        messages.error(request, sentence(exc.message))
    else:
        messages.success(
            request, f"A new link went to {panelist.email}; the old one no longer works."
        )
    return redirect("delphi:panelists", study_id=study.pk)


@login_required
@require_POST
def withdraw_panelist(request: HttpRequest, study_id: int, panelist_id: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    panelist = _panelist_of(study, panelist_id)
    form = ReasonForm(request.POST)
    reason = form.cleaned_data["reason"] if form.is_valid() else ""
    try:
        services.withdraw_panelist(panelist=panelist, actor=request.user, reason=reason)
    except DelphiError as exc:
        messages.error(request, sentence(exc.message))
    else:
        messages.success(
            request,
            f"{panelist.pseudonym} withdrawn; answers already submitted stay in their rounds.",
        )
    return redirect("delphi:panelists", study_id=study.pk)
