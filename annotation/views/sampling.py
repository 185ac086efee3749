"""The sampling page (coordinators): choose strata, a total or quotas and a seed, see the
allocation per stratum, then confirm to record the draw. Preview and confirm run the same
settings through the same sampler; the seed shown in the preview is the one recorded."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from annotation import selectors, services
from annotation.access import Role, get_study_for_user
from annotation.errors import AnnotationError
from annotation.forms import SampleDrawForm
from annotation.models import RatingStudy, SampleDraw
from annotation.sampling import parse_quotas
from medhelm_site.domain_errors import add_to_form

INITIAL = {
    "strata": ["category", "subcategory", "model"],
    "rule": "proportional",
    "paired": True,
    "case_key": "external_id",
}


def _initial(draw: SampleDraw | None) -> dict[str, Any]:
    """The form's defaults: the draw in force's settings (so it can be repeated or varied),
    else stratified by category, subcategory and model, proportional and paired."""
    if draw is None:
        return INITIAL
    # a paired draw's model stratum is recorded as balanced by pairing (older draws: paired)
    asked_model = draw.summary.get("model_by_pairing", draw.paired) if draw.paired else False
    keys = list(draw.strata_keys) + (["model"] if asked_model else [])
    return {
        "strata": keys,
        "rule": draw.rule,
        "total": draw.total,
        "quotas": "\n".join(f"{label} = {n}" for label, n in draw.quotas.items()),
        "seed": draw.seed,
        "paired": draw.paired,
        "case_key": draw.case_key,
    }


def _settings(study: RatingStudy, data: dict[str, Any]) -> dict[str, Any]:
    """The form's answers as the service's keyword arguments (quotas parsed)."""
    settings: dict[str, Any] = {
        "study": study,
        "keys": data["strata"],
        "seed": data["seed"] if data["seed"] is not None else services.new_seed(),
        "paired": data["paired"],
        "case_key": data["case_key"],
    }
    if data["rule"] == "quotas":
        settings["quotas"] = parse_quotas(data["quotas"])
    else:
        settings["total"] = data["total"]
    return settings


def _drawn_message(study: RatingStudy, record: SampleDraw) -> str:
    """What a confirmed draw did: a study with assignments had its unstarted work dealt
    again over the drawn items; a first draw deals nothing until the coordinator assigns."""
    drawn = f"Sample drawn (seed {record.seed}): {record.summary['n_items_drawn']} items to rate"
    dealt = selectors.study_progress(study=study).assignments
    if dealt:
        return f"{drawn}; unstarted work was dealt again over them ({dealt} assignments now)."
    return f"{drawn}. Nothing is dealt to the clinicians yet: deal the drawn items below."


@login_required
def sample_page(request: HttpRequest, study_id: int) -> HttpResponse:
    study, _ = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=[Role.COORDINATOR]
    )
    context: dict[str, Any] = {"study": study, "is_coordinator": True}
    status = 200
    if request.method == "POST":
        form = SampleDrawForm(request.POST)
        if form.is_valid():
            try:
                settings = _settings(study, form.cleaned_data)
                if request.POST.get("action") == "confirm":
                    record = services.draw_sample(actor=request.user, **settings)
                    messages.success(request, _drawn_message(study, record))
                    return redirect("annotation:sample", study_id=study.pk)
                context["preview"] = services.plan_draw(**settings)
                context["seed"] = settings["seed"]
                # the confirm form carries the seed the preview used
                form = SampleDrawForm({**form.cleaned_data, "seed": settings["seed"]})
                form.is_valid()
            except AnnotationError as exc:
                add_to_form(form, exc)
        status = 400 if form.errors else 200
    draw = selectors.current_draw(study=study)
    if request.method != "POST":
        form = SampleDrawForm(initial=_initial(draw))
    context["form"] = form
    context["draw"] = draw
    context["draw_model_note"] = selectors.model_note(draw=draw) if draw is not None else ""
    # whether the draw is dealt yet: a first draw deals nothing until Assign is pressed
    context["progress"] = selectors.study_progress(study=study)
    context["n_items"] = study.items.count()
    return render(request, "annotation/sample.html", context, status=status)
