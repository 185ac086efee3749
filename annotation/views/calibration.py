"""Calibration pages: the coordinators' page (mark an item with a reference rating per
criterion, change or unmark it, each rater's agreement with the reference) and a rater's own
comparison, shown once they have rated every calibration item, from which their queue opens.
"""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render

from annotation import selectors, services
from annotation.access import Role, get_study_for_user
from annotation.calibration_stats import MIN_KAPPA_PAIRS
from annotation.errors import AnnotationError
from annotation.models import RatingStudy, RubricCriterion
from annotation.views.item_choice import asked_item, choose_from, item_field
from medhelm_site.common.querying import parse_id
from medhelm_site.domain_errors import add_to_form


class ReferenceForm(forms.Form):
    """The item, chosen from a list of the study's items (selectors.calibration_item_choices),
    and its reference value per criterion (empty: that criterion has none). The item and the
    values are checked by the service, whose error names the item, or the criterion and the
    value: the list is a convenience, not the check."""

    item = item_field(
        help_text="Grouped by category / subcategory; each named by its case (external id), "
        "model and benchmark. Items already rated as ordinary work and attention checks "
        "are not listed."
    )
    note = forms.CharField(
        required=False,
        label="Who agreed the reference (never shown to raters)",
        widget=forms.Textarea(attrs={"rows": 2, "cols": 50}),
    )

    def __init__(self, *args, criteria: list[RubricCriterion], choices: list, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        choose_from(self.fields["item"], choices)
        self.criteria = criteria
        for c in criteria:
            label = f"{c.label}: reference value"
            self.fields[f"ref-{c.key}"] = forms.IntegerField(
                required=False,
                label=label,
                error_messages={"invalid": f"{c.label}: the reference must be a whole number"},
                widget=forms.NumberInput(attrs={"aria-label": label}),
            )

    def reference(self) -> dict[str, int | None]:
        return {c.key: self.cleaned_data.get(f"ref-{c.key}") for c in self.criteria}

    def rows(self) -> list[tuple[RubricCriterion, forms.BoundField]]:
        return [(c, self[f"ref-{c.key}"]) for c in self.criteria]


def _map_error(form: ReferenceForm, exc: AnnotationError) -> None:
    if exc.field and f"ref-{exc.field}" in form.fields:
        form.add_error(f"ref-{exc.field}", exc.message)
    else:
        add_to_form(form, exc)


@login_required
def calibration_page(request: HttpRequest, study_id: int) -> HttpResponse:
    study, _ = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=[Role.COORDINATOR]
    )
    criteria = list(study.criteria.all())
    if request.method == "POST" and request.POST.get("action") == "unmark":
        return _unmark(request, study)
    initial = asked_item(request)
    choices = selectors.calibration_item_choices(
        study=study, query=request.GET.get("q", ""), include=initial.get("item")
    )
    form = ReferenceForm(
        request.POST or None, criteria=criteria, choices=choices.groups, initial=initial
    )
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                calibration = services.mark_calibration_item(
                    study=study,
                    item_id=form.cleaned_data["item"],
                    reference=form.reference(),
                    note=form.cleaned_data["note"],
                    actor=request.user,
                )
            except AnnotationError as exc:
                _map_error(form, exc)
            else:
                messages.success(
                    request, f"Item {calibration.item.external_id} is a calibration item."
                )
                return redirect("annotation:calibration", study_id=study.pk)
    labels = {c.key: c.label for c in criteria}
    return render(
        request,
        "annotation/calibration.html",
        {
            "study": study,
            "form": form,
            "choices": choices,
            "calibration_items": [
                (c, [(labels.get(k, k), v) for k, v in c.reference.items()])
                for c in selectors.calibration_items(study=study)
            ],
            "calibration_results": selectors.calibration_results(study=study),
            "criteria": criteria,
            "min_kappa_pairs": MIN_KAPPA_PAIRS,
        },
        status=status,
    )


def _unmark(request: HttpRequest, study: RatingStudy) -> HttpResponse:
    item_id = parse_id(request.POST.get("item"), field="item")
    try:
        services.unmark_calibration_item(study=study, item_id=item_id, actor=request.user)
    except AnnotationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, "The item is an ordinary item again.")
    return redirect("annotation:calibration", study_id=study.pk)


@login_required
def my_calibration(request: HttpRequest, study_id: int) -> HttpResponse:
    """The rater's ratings of the calibration items beside the reference, once all are
    rated; before that, how many are left (no reference value is shown)."""
    study, _ = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=[Role.CLINICIAN]
    )
    return render(
        request,
        "annotation/my_calibration.html",
        {
            "study": study,
            "calibration": selectors.rater_calibration(study=study, user=request.user),
        },
    )
