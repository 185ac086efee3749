"""The coordinators' attention-checks page (mark an item, give the expected answer per
criterion, unmark it, see each rater's results) and the results' CSV export."""

from __future__ import annotations

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.shortcuts import redirect, render

from annotation import selectors, services
from annotation.access import STUDY_READERS, Role, get_study_for_user
from annotation.errors import AnnotationError
from annotation.models import RatingStudy, RubricCriterion
from annotation.views.item_choice import asked_item, choose_from, item_field
from medhelm_site.common.csv_export import csv_lines
from medhelm_site.common.querying import parse_id
from medhelm_site.domain_errors import add_to_form


class CheckForm(forms.Form):
    """The item and, per criterion, the lowest and highest answer that pass (either may be
    left empty: the scale's end; both empty: the criterion is not checked)."""

    item = item_field(
        help_text="The items dealt to clinicians (the sample drawn, if any), grouped by "
        "category / subcategory; each named by its case (external id), model and benchmark. "
        "Calibration items are not listed; choosing a check changes its answers."
    )
    note = forms.CharField(
        required=False,
        label="Note for coordinators (never shown to raters)",
        widget=forms.Textarea(attrs={"rows": 2, "cols": 50}),
    )

    def __init__(self, *args, criteria: list[RubricCriterion], choices: list, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        choose_from(self.fields["item"], choices)
        self.criteria = criteria
        for c in criteria:
            for end in ("low", "high"):
                label = f"{c.label}: {'lowest' if end == 'low' else 'highest'} passing answer"
                self.fields[f"{end}-{c.key}"] = forms.IntegerField(
                    required=False,
                    min_value=c.scale_min,
                    max_value=c.scale_max,
                    label=label,
                    widget=forms.NumberInput(attrs={"aria-label": label}),
                )

    def expected(self) -> dict[str, tuple[int | None, int | None]]:
        data = self.cleaned_data
        return {c.key: (data.get(f"low-{c.key}"), data.get(f"high-{c.key}")) for c in self.criteria}

    def rows(self) -> list[tuple[RubricCriterion, forms.BoundField, forms.BoundField]]:
        return [(c, self[f"low-{c.key}"], self[f"high-{c.key}"]) for c in self.criteria]


def _map_error(form: CheckForm, exc: AnnotationError) -> None:
    """A criterion's error goes beside its lowest-answer field."""
    if exc.field and f"low-{exc.field}" in form.fields:
        form.add_error(f"low-{exc.field}", exc.message)
    else:
        add_to_form(form, exc)


@login_required
def checks_page(request: HttpRequest, study_id: int) -> HttpResponse:
    study, _ = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=[Role.COORDINATOR]
    )
    criteria = list(study.criteria.all())
    if request.method == "POST" and request.POST.get("action") == "unmark":
        return _unmark(request, study)
    initial = asked_item(request)
    choices = selectors.check_item_choices(
        study=study, query=request.GET.get("q", ""), include=initial.get("item")
    )
    form = CheckForm(
        request.POST or None, criteria=criteria, choices=choices.groups, initial=initial
    )
    status = 200
    if request.method == "POST":
        status = 400
        if form.is_valid():
            try:
                check = services.mark_attention_check(
                    study=study,
                    item_id=form.cleaned_data["item"],
                    expected=form.expected(),
                    note=form.cleaned_data["note"],
                    actor=request.user,
                )
            except AnnotationError as exc:
                _map_error(form, exc)
            else:
                messages.success(request, f"Item {check.item.external_id} is an attention check.")
                return redirect("annotation:checks", study_id=study.pk)
    return render(
        request,
        "annotation/attention_checks.html",
        {
            "study": study,
            "form": form,
            "choices": choices,
            "checks": selectors.attention_checks(study=study),
            "check_results": selectors.check_results(study=study),
        },
        status=status,
    )


def _unmark(request: HttpRequest, study: RatingStudy) -> HttpResponse:
    item_id = parse_id(request.POST.get("item"), field="item")
    try:
        services.unmark_attention_check(study=study, item_id=item_id, actor=request.user)
    except AnnotationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(request, "The item is an ordinary item again.")
    return redirect("annotation:checks", study_id=study.pk)


@login_required
def export_checks(request: HttpRequest, study_id: int) -> HttpResponse:
    """Each rater's answers on each attention check, per expected criterion."""
    study, _ = get_study_for_user(user=request.user, study_id=study_id, allowed_roles=STUDY_READERS)
    response = StreamingHttpResponse(
        csv_lines(selectors.CHECK_EXPORT_COLUMNS, selectors.check_export_rows(study=study)),
        content_type="text/csv",
    )
    response["Content-Disposition"] = (
        f'attachment; filename="study-{study.pk}-attention-checks.csv"'
    )
    return response
