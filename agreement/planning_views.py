"""The planning page of a study: how many items, from the published formulas, and a simulated
study for the designs they do not cover. The sample-size questions are GET forms (pure
arithmetic, nothing changes); a simulation starts work, so it is a POST with its CSRF token
(a GET of it answers 405), queued for a worker or computed here. Each result is shown on the
page, each input error under its field. Coordinators and researchers; a simulation can be
cancelled by whoever started it and by the study's coordinators."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseRedirect,
    JsonResponse,
)
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from agreement.errors import AgreementError
from agreement.models import PlanningSimulation
from agreement.planning_forms import QUESTIONS
from agreement.services import planning, simulations
from agreement.stats.planning import PlanningInputError
from annotation.access import STUDY_READERS, get_study_for_user
from annotation.models import RatingStudy
from annotation.selectors import study_model_count

SIMULATION = "simulation"


def _initial(study: RatingStudy) -> dict[str, Any]:
    """Defaults drawn from the study: its ratings per item as k when that is 2 or more."""
    k = study.ratings_per_item if study.ratings_per_item >= 2 else 3
    return {"k": k, "k_low": k, "raters_per_item": k}


def _bound_forms(
    study: RatingStudy, asked: str | None, data: Any
) -> tuple[str | None, dict[str, forms.Form]]:
    initial = _initial(study)
    built: dict[str, forms.Form] = {}
    for name, form_class in QUESTIONS.items():
        if name == asked:
            built[name] = form_class(data, prefix=name)
        else:
            known = {k: v for k, v in initial.items() if k in form_class.base_fields}
            built[name] = form_class(prefix=name, initial=known)
    return (asked if asked in QUESTIONS else None), built


def _attach(form: forms.Form, exc: PlanningInputError) -> None:
    form.add_error(exc.field if exc.field in form.fields else None, exc.message)


def _see_other(url: str) -> HttpResponseRedirect:
    """After a POST, the page to GET (303: reloading it never posts again)."""
    response = HttpResponseRedirect(url)
    response.status_code = 303
    return response


def _simulation_url(study: RatingStudy, task_id: str, name: str = "plan-simulation") -> str:
    return reverse(f"agreement:{name}", kwargs={"study_id": study.pk, "task_id": task_id})


@login_required
@require_http_methods(["GET", "HEAD", "POST"])
def plan(request: HttpRequest, study_id: int) -> HttpResponse:
    study, roles = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=STUDY_READERS
    )
    if request.method == "POST":
        asked, built = _bound_forms(study, SIMULATION, request.POST)
    elif request.GET.get("question") == SIMULATION:
        # A link (an old bookmark, or a cross-site one) starts nothing: 405, said on a page
        # that leads back to the form.
        refused = render(
            request, "agreement/plan_simulation_get.html", {"study": study}, status=405
        )
        refused["Allow"] = "POST"
        return refused
    else:
        asked, built = _bound_forms(study, request.GET.get("question"), request.GET)
    context: dict[str, Any] = {"study": study, "forms": built, "asked": asked}
    form = built.get(asked) if asked else None
    if form is not None and form.is_valid():
        try:
            if asked == SIMULATION:
                spec = planning.design_spec(form.cleaned_data)
                record, result = simulations.start_simulation(
                    study=study, actor=request.user, spec=spec
                )
                if record is not None:
                    return _see_other(_simulation_url(study, record.task_id))
                context["simulation"] = result
            else:
                answer = planning.answer(asked, form.cleaned_data)
                context["answer"] = answer
                context["cases_note"] = planning.in_cases(
                    n_items=answer.n_items, n_models=study_model_count(study=study)
                )
        except PlanningInputError as exc:
            _attach(form, exc)
        except simulations.SimulationBusy as exc:
            form.add_error(None, exc.message)
            context["busy_url"] = _simulation_url(exc.running.study, exc.running.task_id)
    status = 400 if form is not None and form.errors else 200
    context["is_coordinator"] = "coordinator" in roles
    return render(request, "agreement/plan.html", context, status=status)


@login_required
def plan_simulation(request: HttpRequest, study_id: int, task_id: str) -> HttpResponse:
    """A queued simulation: its progress (the page refreshes itself while it runs), its
    result, or why there is none; the button that cancels it while it waits or runs."""
    study, roles = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=STUDY_READERS
    )
    status = simulations.simulation_status(study=study, task_id=task_id)
    record = simulations.simulation_for_study(study=study, task_id=task_id)
    running = status["state"] in ("waiting", "running")
    context = {
        "study": study,
        "task_id": task_id,
        "status": status,
        "simulation": status.get("result"),
        "is_coordinator": "coordinator" in roles,
        "refresh": running,
        "may_cancel": running and record is not None and _may_cancel(request, record, roles),
    }
    return render(request, "agreement/plan_simulation.html", context)


@login_required
def plan_simulation_status(request: HttpRequest, study_id: int, task_id: str) -> JsonResponse:
    study, _ = get_study_for_user(user=request.user, study_id=study_id, allowed_roles=STUDY_READERS)
    return JsonResponse(simulations.simulation_status(study=study, task_id=task_id))


def _may_cancel(request: HttpRequest, record: PlanningSimulation, roles: set[str]) -> bool:
    return record.requested_by_id == request.user.pk or "coordinator" in roles


@login_required
@require_POST
def plan_simulation_cancel(request: HttpRequest, study_id: int, task_id: str) -> HttpResponse:
    """Cancel a simulation of this study (its requester or a coordinator), then show it."""
    study, roles = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=STUDY_READERS
    )
    record = simulations.simulation_for_study(study=study, task_id=task_id)
    if record is None:
        raise Http404("No simulation of this study has that id.")
    if not _may_cancel(request, record, roles):
        raise PermissionDenied(
            "Only whoever started the simulation or a coordinator may cancel it."
        )
    try:
        simulations.cancel_simulation(record=record, actor=request.user)
    except AgreementError as exc:
        return HttpResponse(exc.message, status=400, content_type="text/plain; charset=utf-8")
    return _see_other(_simulation_url(study, task_id))
