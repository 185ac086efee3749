"""The coordinator's "Recompute now" of the agreement watch on the dashboard (queued for a
worker like the refresh after a rating; nothing is computed in the request)."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from annotation import selectors, services
from annotation.access import Role, get_study_for_user


@login_required
@require_POST
def refresh_watch(request: HttpRequest, study_id: int) -> HttpResponse:
    study, _ = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=[Role.COORDINATOR]
    )
    services.request_watch_refresh(study_id=study.pk, force=True)
    watch = selectors.agreement_watch(study=study)
    if watch.updating:
        messages.success(request, "Agreement so far is being recomputed by a worker.")
    else:
        messages.error(request, f"Agreement so far could not be recomputed: {watch.error}")
    return redirect("annotation:study", study_id=study.pk)
