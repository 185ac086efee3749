"""Agreement report pages: a study's reports with the "compute a new report" form, one report
(server-rendered, no JavaScript, plots as inline SVG), its exports and recomputation.

Readers of the study (coordinators and researchers) only: 404 for non-members, 403 for
clinicians. Raters appear by study pseudonym only.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST

from agreement import analysis, plots, selectors, services
from agreement.errors import AgreementError
from agreement.models import ReportJob, ReportSnapshot
from annotation.access import STUDY_READERS, Role, get_study_for_user
from annotation.models import RatingStudy


class ReportForm(forms.Form):
    title = forms.CharField(required=False, max_length=300)
    n_resamples = forms.IntegerField(
        label="Bootstrap resamples", min_value=10, max_value=services.MAX_RESAMPLES, initial=1000
    )
    seed = forms.IntegerField(
        required=False,
        min_value=0,
        max_value=services.MAX_SEED,
        help_text="Blank: a random seed, recorded with the report.",
    )
    confidence = forms.FloatField(min_value=0.5, max_value=0.999, initial=0.95)
    ci_method = forms.ChoiceField(
        label="Interval",
        choices=[("bca", "BCa bootstrap"), ("percentile", "Percentile bootstrap")],
        initial="bca",
    )
    values = forms.ChoiceField(
        label="Clinician ratings",
        choices=[("latest", "Latest values"), ("first", "As first submitted")],
        initial="latest",
    )
    min_shared_items = forms.IntegerField(
        label="Items a clinician pair must share",
        required=False,
        min_value=2,
        max_value=1000,
        initial=2,
        help_text=(
            "MedHELM uses 2; pairs sharing only 2 items can give extreme ICCs. Part of the "
            "estimability rule: a cell or clinician pair on fewer shared items is not estimable."
        ),
    )
    max_ci_width = forms.FloatField(
        label="Widest interval still estimable",
        required=False,
        min_value=0.01,
        max_value=2.0,
        initial=analysis.DEFAULT_MAX_CI_WIDTH,
        help_text=(
            "A cell whose interval is wider, or whose ICC lies outside [-1, 1], shows "
            '"not estimable" with the reason, and stays out of every mean.'
        ),
    )
    exclude_flagged = forms.BooleanField(
        label="Leave out flagged judge verdicts",
        required=False,
        help_text=(
            "Verdicts whose explanation repeats the evaluated output, or whose scores follow "
            "verdict-like text planted in it. Unticked (the default) they are included; the "
            "coverage counts them either way."
        ),
    )


def _snapshot_of(study: RatingStudy, report_id: int) -> ReportSnapshot:
    snapshot = selectors.study_snapshot(study=study, report_id=report_id)
    if snapshot is None:
        raise Http404("No such report.")
    return snapshot


@login_required
def reports(request: HttpRequest, study_id: int) -> HttpResponse:
    study, roles = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=STUDY_READERS
    )
    form = ReportForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            job = services.request_report(
                study=study, actor=request.user, parameters=form.cleaned_data
            )
        except AgreementError as exc:
            for field, msgs in exc.as_dict().items():
                form.add_error(field if field in form.fields else None, msgs)
        else:
            return _after_request(request, study, job)
    services.fail_stale_jobs(study=study)
    snapshots = list(selectors.study_snapshots(study=study)[:200])
    names = selectors.member_pseudonyms(study=study)
    rows = [(s, names.get(s.created_by_id, plots.DASH)) for s in snapshots]
    return render(
        request,
        "agreement/reports.html",
        {
            "study": study,
            "form": form,
            "rows": rows,
            "jobs": selectors.open_and_failed_jobs(study=study),
            "is_coordinator": Role.COORDINATOR in roles,
            "judge_notes": selectors.judges_with_notes(study=study),
        },
    )


def _after_request(request: HttpRequest, study: RatingStudy, job: ReportJob) -> HttpResponse:
    """Where a reader goes after asking for a report: the report when it was computed in the
    request, else the job's progress page."""
    if job.status == ReportJob.Status.FINISHED:
        messages.success(request, f"Report computed (seed {job.parameters['seed']}).")
        return redirect("agreement:report", study_id=study.pk, report_id=job.snapshot_id)
    return redirect("agreement:job", study_id=study.pk, job_id=job.pk)


def _job_of(study: RatingStudy, job_id: int) -> ReportJob:
    services.fail_stale_jobs(study=study)
    job = selectors.study_job(study=study, job_id=job_id)
    if job is None:
        raise Http404("No such report job.")
    return job


@login_required
def job(request: HttpRequest, study_id: int, job_id: int) -> HttpResponse:
    """A report being computed: its stage and progress (updated in place by
    report_job.js; without JavaScript the page refreshes itself), or why it failed."""
    study, roles = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=STUDY_READERS
    )
    found = _job_of(study, job_id)
    if found.status == ReportJob.Status.FINISHED and found.snapshot_id:
        return redirect("agreement:report", study_id=study.pk, report_id=found.snapshot_id)
    return render(
        request,
        "agreement/job.html",
        {
            "study": study,
            "job": found,
            "state": selectors.job_state(found),
            "is_coordinator": Role.COORDINATOR in roles,
        },
    )


@login_required
def job_status(request: HttpRequest, study_id: int, job_id: int) -> JsonResponse:
    """The job's state as JSON, with the report's address once it is done."""
    study, _ = get_study_for_user(user=request.user, study_id=study_id, allowed_roles=STUDY_READERS)
    found = _job_of(study, job_id)
    state = selectors.job_state(found)
    if found.snapshot_id:
        state["report_url"] = reverse(
            "agreement:report", kwargs={"study_id": study.pk, "report_id": found.snapshot_id}
        )
    return JsonResponse(state)


def _display(cell: dict[str, Any] | None) -> dict[str, Any] | None:
    if cell is None:
        return None
    if cell.get("status") == "not_estimable":  # the reason instead of any number
        return {**cell, "estimate_text": analysis.NOT_ESTIMABLE, "ci_text": plots.DASH}
    return {
        **cell,
        "estimate_text": plots.fmt(cell.get("estimate")),
        "ci_text": plots.fmt_ci(cell.get("ci_low"), cell.get("ci_high")),
    }


def wide_table(results: dict[str, Any], section: str) -> list[dict[str, Any]]:
    """Rows of one section, each with its cells in column order (None where missing)."""
    columns = [c["column"] for c in results.get("columns", [])]
    cells = [c for c in results.get("cells", []) if c["section"] == section]
    order = list(dict.fromkeys((c["row_group"], c["row"]) for c in cells))
    index = {(c["row_group"], c["row"], c["column"]): c for c in cells}
    return [
        {
            "group": group,
            "label": row,
            "cells": [_display(index.get((group, row, col))) for col in columns],
        }
        for group, row in order
    ]


@login_required
def report(request: HttpRequest, study_id: int, report_id: int) -> HttpResponse:
    study, roles = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=STUDY_READERS
    )
    snapshot = _snapshot_of(study, report_id)
    results = snapshot.results
    method = services.stated_method(snapshot)
    return render(
        request,
        "agreement/report.html",
        {
            "study": study,
            "snapshot": snapshot,
            "created_by": selectors.member_pseudonyms(study=study).get(
                snapshot.created_by_id, plots.DASH
            ),
            "is_coordinator": Role.COORDINATOR in roles,
            "columns": results.get("columns", []),
            "table2": wide_table(results, "overall"),
            "per_criterion": wide_table(results, "criterion"),
            "differences": [_display(d) for d in results.get("differences", [])],
            "leaderboard": results.get("leaderboard", {}),
            "coverage": results.get("coverage", {}),
            "changes": results.get("changes"),
            "method": method,
            "method_json": json.dumps(method, indent=2, sort_keys=True),
            "sensitivity": results.get("sensitivity"),
            "parameters": snapshot.parameters,
            "figures": services.page_figures(snapshot),
            "later": selectors.recomputation_ids(snapshot=snapshot),
            "clinician_column": analysis.CLINICIAN_COLUMN,
            "judge_notes": selectors.judges_with_notes(study=study),
        },
    )


def export_response(snapshot: ReportSnapshot, fmt: str) -> HttpResponse:
    """A stored rendering of a snapshot (CSV, JSON, PDF, ...) as a download."""
    kind = services.DOWNLOADS.get(fmt)
    if kind is None:
        raise Http404(f"Exports are {', '.join(sorted(services.DOWNLOADS))}.")
    content, content_type = services.rendering_of(snapshot, kind)
    response = HttpResponse(content, content_type=content_type)
    name = f"agreement-report-{snapshot.study_id}-{snapshot.pk}"
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response


@login_required
def report_export(request: HttpRequest, study_id: int, report_id: int, fmt: str) -> HttpResponse:
    study, _ = get_study_for_user(user=request.user, study_id=study_id, allowed_roles=STUDY_READERS)
    return export_response(_snapshot_of(study, report_id), fmt)


@login_required
@require_POST
def recompute(request: HttpRequest, study_id: int, report_id: int) -> HttpResponse:
    study, _ = get_study_for_user(user=request.user, study_id=study_id, allowed_roles=STUDY_READERS)
    snapshot = _snapshot_of(study, report_id)
    job = services.request_recomputation(snapshot=snapshot, actor=request.user)
    if job.status != ReportJob.Status.FINISHED:
        return redirect("agreement:job", study_id=study.pk, job_id=job.pk)
    changes = job.snapshot.results.get("changes", {})
    messages.success(
        request,
        "Recomputed with the same parameters: "
        + ("the scores changed" if changes.get("input_changed") else "the scores are unchanged")
        + f", {changes.get('n_cells_moved', 0)} cell(s) moved.",
    )
    return redirect("agreement:report", study_id=study.pk, report_id=job.snapshot_id)
