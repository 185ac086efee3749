"""Pages: home per role, the clinician's queue, a study's overview."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from annotation import selectors
from annotation.access import Role, get_study_for_user
from delphi import selectors as delphi_selectors


@login_required
def home(request: HttpRequest) -> HttpResponse:
    user = request.user
    context = {
        "clinician_queues": selectors.clinician_progress(user=user),
        "coordinated_studies": selectors.studies_for(user=user, role=Role.COORDINATOR),
        "researched_studies": selectors.studies_for(user=user, role=Role.RESEARCHER),
        "coordinated_delphi": delphi_selectors.delphi_studies_coordinated_by(user=user),
        "panel_seats": delphi_selectors.panel_seats_of(user=user),
    }
    context["has_any_role"] = any(bool(v) for k, v in context.items() if k != "has_any_role")
    return render(request, "annotation/home.html", context)


@login_required
def queue(request: HttpRequest, study_id: int) -> HttpResponse:
    study, _ = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=[Role.CLINICIAN]
    )
    assignments = list(selectors.clinician_queue(study=study, user=request.user))
    done = sum(a.status == "submitted" for a in assignments)
    return render(
        request,
        "annotation/queue.html",
        {
            "study": study,
            "assignments": assignments,
            "done": done,
            "total": len(assignments),
            "percent_done": round(100 * done / len(assignments)) if assignments else 100,
            "calibration": selectors.rater_calibration(study=study, user=request.user),
        },
    )
