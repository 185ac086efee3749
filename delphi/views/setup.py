"""The coordinator's set-up pages: creating a study, its overview, the protocol (with the
draft taxonomy) and locking it.

Views are thin: parse the form, check access (delphi.access: 404 for outsiders, 403 for
panelists), call one service, redirect with a message. A service's DelphiError (or a
TaxonomyFormatError from an import) is shown as a message or form error; anything else is a
bug and becomes a logged 500.
"""

from __future__ import annotations

import json

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from delphi import consensus, exports, selectors, services
from delphi.access import get_study_for_coordinator
from delphi.forms import NewStudyForm, OpenRoundForm, ProtocolForm, TaxonomySourceForm, sentence
from delphi.models import DelphiStudy
from delphi.services import DelphiError, TaxonomyFormatError
from delphi.views.coordinator import draft_taxonomy, form_problems


@login_required
def create_study(request: HttpRequest) -> HttpResponse:
    # As for rating studies, creating is for those the site administrator allows (staff).
    if not request.user.has_perm("delphi.add_delphistudy"):
        raise PermissionDenied("You may not create Delphi studies; ask a site administrator.")
    form = NewStudyForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            # Importing the draft and creating the study succeed or fail together: a failed
            # study must not leave an orphan imported taxonomy behind.
            with transaction.atomic():
                study = services.create_delphi_study(
                    title=form.cleaned_data["title"],
                    aims=form.cleaned_data["aims"],
                    draft_taxonomy=draft_taxonomy(form.cleaned_data),
                    created_by=request.user,
                )
        except (DelphiError, TaxonomyFormatError) as exc:
            form.add_error(None, sentence(str(exc)))
        else:
            messages.success(
                request, "Delphi study created. Set the protocol up and invite the panel next."
            )
            return redirect("delphi:study", study_id=study.pk)
    return render(request, "delphi/study_form.html", {"form": form})


@login_required
def study_page(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    summaries = selectors.round_summaries(study=study)
    latest = summaries[-1].round if summaries else None
    return render(
        request,
        "delphi/study.html",
        {
            "study": study,
            "panel": selectors.panel_counts(study=study),
            "rounds": summaries,
            "latest": latest,
            "stopping": latest.stopping_decision if latest else None,
            "rule_text": consensus.describe_rule(study.consensus_rule),
            "stopping_text": exports.describe_stopping_rule(study.stopping_rule),
            "open_form": OpenRoundForm(),
            "export_names": exports.EXPORT_NAMES,
            "coordinators": study.coordinators.select_related("user").order_by("added_at"),
        },
    )


@login_required
def protocol_page(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    in_setup = study.status == DelphiStudy.Status.SETUP
    form = None
    if request.method == "POST":
        if not in_setup:
            messages.error(request, "The protocol is locked; it can no longer change.")
            return redirect("delphi:protocol", study_id=study.pk)
        form = ProtocolForm(request.POST)
        if form.is_valid():
            try:
                services.update_protocol(study=study, actor=request.user, changes=form.changes())
            except DelphiError as exc:
                form.add_service_error(exc)
            else:
                messages.success(request, "Protocol saved.")
                return redirect("delphi:protocol", study_id=study.pk)
    elif in_setup:
        form = ProtocolForm(initial=ProtocolForm.initial_for(study))
    document = services.current_protocol_document(study)
    taxonomy_form = None
    if in_setup:
        taxonomy_form = TaxonomySourceForm(
            initial={"taxonomy_source": "version", "taxonomy_version": study.draft_taxonomy}
        )
    return render(
        request,
        "delphi/protocol.html",
        {
            "study": study,
            "in_setup": in_setup,
            "form": form,
            "taxonomy_form": taxonomy_form,
            "document": document,
            "document_json": json.dumps(document, indent=2, ensure_ascii=False),
            "rule_text": consensus.describe_rule(document["consensus_rule"]),
            "stopping_text": exports.describe_stopping_rule(document["stopping_rule"]),
            "taxonomy": document["taxonomy_draft"],
        },
    )


@login_required
@require_POST
def change_taxonomy(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    form = TaxonomySourceForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, form_problems(form))
        return redirect("delphi:protocol", study_id=study.pk)
    try:
        with transaction.atomic():  # no orphan import when the study refuses the change
            taxonomy = draft_taxonomy(form.cleaned_data)
            services.set_draft_taxonomy(study=study, actor=request.user, taxonomy=taxonomy)
    except (DelphiError, TaxonomyFormatError) as exc:
        messages.error(request, sentence(str(exc)))
    else:
        messages.success(request, f"The draft taxonomy is now {taxonomy.name!r}.")
    return redirect("delphi:protocol", study_id=study.pk)


@login_required
@require_POST
def lock_protocol(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    if request.POST.get("confirm") != "yes":
        messages.error(request, "Tick the box to confirm: locking cannot be undone.")
        return redirect("delphi:protocol", study_id=study.pk)
    try:
        study = services.lock_protocol(study=study, actor=request.user)
    except DelphiError as exc:
        messages.error(request, sentence(exc.message))
        return redirect("delphi:protocol", study_id=study.pk)
    messages.success(
        request,
        f"Protocol locked (SHA-256 {study.protocol_hash[:12]}…); round 1 is drafted from the "
        "taxonomy.",
    )
    return redirect("delphi:study", study_id=study.pk)
