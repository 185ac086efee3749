"""The planning page of a study: how many items, from the published formulas, and a simulated
study for the designs they do not cover. GET forms (a plan changes nothing); each result is
shown on the page, each input error under its field. Coordinators and researchers."""

from __future__ import annotations

import time
from typing import Any

from django import forms
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.urls import reverse

from agreement.planning_forms import QUESTIONS
from agreement.services import planning
from agreement.stats.planning import PlanningInputError
from annotation.access import STUDY_READERS, get_study_for_user
from annotation.models import RatingStudy
from annotation.selectors import study_model_count


def _initial(study: RatingStudy) -> dict[str, Any]:
    """Defaults drawn from the study: its ratings per item as k when that is 2 or more."""
    k = study.ratings_per_item if study.ratings_per_item >= 2 else 3
    return {"k": k, "k_low": k, "raters_per_item": k}


def _bound_forms(request: HttpRequest, study: RatingStudy) -> tuple[str | None, dict[str, Any]]:
    asked = request.GET.get("question")
    initial = _initial(study)
    built: dict[str, forms.Form] = {}
    for name, form_class in QUESTIONS.items():
        if name == asked:
            built[name] = form_class(request.GET, prefix=name)
        else:
            known = {k: v for k, v in initial.items() if k in form_class.base_fields}
            built[name] = form_class(prefix=name, initial=known)
    return (asked if asked in QUESTIONS else None), built


def _attach(form: forms.Form, exc: PlanningInputError) -> None:
    form.add_error(exc.field if exc.field in form.fields else None, exc.message)


@login_required
def plan(request: HttpRequest, study_id: int) -> HttpResponse:
    study, roles = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=STUDY_READERS
    )
    asked, built = _bound_forms(request, study)
    context: dict[str, Any] = {"study": study, "forms": built, "asked": asked}
    form = built.get(asked) if asked else None
    if form is not None and form.is_valid():
        try:
            if asked == "simulation":
                spec = planning.design_spec(form.cleaned_data)
                task_id, result = planning.start_simulation(study_id=study.pk, spec=spec)
                context["simulation"] = result
                if task_id is not None:
                    context["task_url"] = (
                        reverse(
                            "agreement:plan-simulation",
                            kwargs={"study_id": study.pk, "task_id": task_id},
                        )
                        + f"?queued={int(time.time())}"
                    )
            else:
                answer = planning.answer(asked, form.cleaned_data)
                context["answer"] = answer
                context["cases_note"] = planning.in_cases(
                    n_items=answer.n_items, n_models=study_model_count(study=study)
                )
        except PlanningInputError as exc:
            _attach(form, exc)
    status = 400 if form is not None and form.errors else 200
    context["is_coordinator"] = "coordinator" in roles
    return render(request, "agreement/plan.html", context, status=status)


def _status(request: HttpRequest, study: RatingStudy, task_id: str) -> dict[str, Any]:
    try:
        queued = float(request.GET.get("queued", ""))
    except ValueError:
        queued = None
    return planning.simulation_status(study_id=study.pk, task_id=task_id, queued_at=queued)


@login_required
def plan_simulation(request: HttpRequest, study_id: int, task_id: str) -> HttpResponse:
    """A queued simulation: its progress (the page refreshes itself while it runs), its
    result, or why there is none."""
    study, roles = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=STUDY_READERS
    )
    status = _status(request, study, task_id)
    context = {
        "study": study,
        "task_id": task_id,
        "status": status,
        "simulation": status.get("result"),
        "is_coordinator": "coordinator" in roles,
        "refresh": status["state"] in ("waiting", "running"),
    }
    return render(request, "agreement/plan_simulation.html", context)


@login_required
def plan_simulation_status(request: HttpRequest, study_id: int, task_id: str) -> JsonResponse:
    study, _ = get_study_for_user(user=request.user, study_id=study_id, allowed_roles=STUDY_READERS)
    return JsonResponse(_status(request, study, task_id))
