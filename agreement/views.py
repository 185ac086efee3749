"""Agreement report pages: a study's reports with the "compute a new report" form, one report
(server-rendered; plots as <img> of their stored SVG files; one vendored script for the
copy button), its exports
and recomputation.

Readers of the study (coordinators and researchers) only: 404 for non-members, 403 for
clinicians. Raters appear by study pseudonym only.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST

from agreement import analysis, plots, presenters, selectors, services
from agreement.errors import AgreementError
from agreement.input_status import incomplete_message, input_status
from agreement.models import ReportJob, ReportSnapshot
from agreement.stats.medhelm import BY_DESIGN, REQUESTABLE_FORMS
from annotation.access import STUDY_READERS, Role, get_study_for_user
from annotation.models import RatingStudy
from jury import metric_jobs
from medhelm_site.csp import with_self_contained_policy


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
    clinician_form = forms.TypedChoiceField(
        label="Clinician-clinician form",
        choices=list(analysis.CLINICIAN_FORM_CHOICES.items()),
        required=False,
        empty_value=None,
        initial=BY_DESIGN,
        help_text=(
            "By default each cell's design decides: MedHELM's mean over clinician pairs where "
            "every clinician rated every item or every pair shares enough items, else the "
            "two-way form with each clinician's offset fitted. MedHELM's pair mean everywhere "
            "reproduces the published method."
        ),
        error_messages={
            "invalid_choice": f"must be one of {', '.join(REQUESTABLE_FORMS)}, got '%(value)s'"
        },
    )
    confirm_incomplete = forms.BooleanField(
        label="Compute even though judge calls or metrics are incomplete",
        required=False,
        help_text="Asked only when they are: the report then states what it was computed on.",
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


#: How the page's reader confirms (the API says how its caller does).
CONFIRM_ON_PAGE = "Tick the confirmation"


def _snapshot_of(
    study: RatingStudy, report_id: int, *, with_results: bool = True
) -> ReportSnapshot:
    snapshot = selectors.study_snapshot(study=study, report_id=report_id, with_results=with_results)
    if snapshot is None:
        raise Http404("No such report.")
    return snapshot


@login_required
def reports(request: HttpRequest, study_id: int) -> HttpResponse:
    study, roles = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=STUDY_READERS
    )
    form = ReportForm(request.POST or None)
    status = input_status(study=study)
    confirmed = (
        request.method == "POST" and form.is_valid() and form.cleaned_data["confirm_incomplete"]
    )
    if request.method == "POST" and form.is_valid() and status["incomplete"] and not confirmed:
        form.add_error(
            "confirm_incomplete", incomplete_message(status, how_to_confirm=CONFIRM_ON_PAGE)
        )
    if request.method == "POST" and form.is_valid():
        try:
            parameters = {k: v for k, v in form.cleaned_data.items() if k != "confirm_incomplete"}
            job = services.request_report(study=study, actor=request.user, parameters=parameters)
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
            **_machine_scores(study, status, back=request.get_full_path()),
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


@login_required
def report(request: HttpRequest, study_id: int, report_id: int) -> HttpResponse:
    """A stored report: its header per request, its body (tables, figures) as stored by the
    job that computed it, so opening it decodes no results and renders no table."""
    study, roles = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=STUDY_READERS
    )
    snapshot = _snapshot_of(study, report_id, with_results=False)
    context = {
        **presenters.header_context(study=study, snapshot=snapshot),
        "is_coordinator": Role.COORDINATOR in roles,
    }
    return _with_stored_body(
        request, "agreement/report.html", context, services.page_body(snapshot)
    )


#: Download file names: Table 2's files are named for it, the rest for the report.
EXPORT_NAMES = {"tex": "table2", "md": "table2"}


@login_required
def machine_status(request: HttpRequest, study_id: int, report_id: int) -> HttpResponse:
    """Where the study's judge calls and metrics stand now, as the HTML the report page puts
    in its status panel once it has opened: counting them reads every score of a large
    study, so the stored report does not wait for it (agreement/machine_status.js)."""
    study, roles = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=STUDY_READERS
    )
    _snapshot_of(study, report_id, with_results=False)  # 404 for another study's report
    return render(
        request,
        "agreement/_input_status.html",
        {
            "study": study,
            "is_coordinator": Role.COORDINATOR in roles,
            **_machine_scores(
                study,
                input_status(study=study),
                back=reverse("agreement:report", args=[study.pk, report_id]),
            ),
        },
    )


def _machine_scores(study: RatingStudy, status: dict[str, Any], *, back: str) -> dict[str, Any]:
    """What agreement/_input_status.html shows besides the study: the judges and imported
    metrics of `status`, and the site's own metrics with their jobs (jury/_metric_states)."""
    own = set(metric_jobs.ALL_METRICS)
    return {
        "status": status,
        "imported_metrics": [m for m in status["metrics"] if m["metric"] not in own],
        "back": back,
        **metric_jobs.metric_panel(study=study),
    }


#: Where the stored body goes in the rendered page. A comment the template writes itself:
#: text from the data is escaped, so it can never produce this before the body's place.
BODY_MARK = "<!-- stored report body -->"


def _with_stored_body(
    request: HttpRequest, template: str, context: dict[str, Any], body: bytes
) -> HttpResponse:
    """The page rendered around a stored body, the body's bytes put in as they are: a
    MedHELM-sized body is a few hundred kilobytes of tables (the figures are <img> of their
    stored files), and passing it through the template would decode, join and encode it
    again on every open."""
    page = render_to_string(template, {**context, "body": mark_safe(BODY_MARK)}, request=request)
    head, mark, tail = page.encode().partition(BODY_MARK.encode())
    if not mark:
        raise ValueError(f"{template} has no place for the report body ({{{{ body }}}})")
    return HttpResponse(b"".join((head, body, tail)))


def export_response(snapshot: ReportSnapshot, fmt: str) -> HttpResponse:
    """A stored rendering of a snapshot (CSV, JSON, PDF, LaTeX, Markdown) as a download."""
    kind = services.DOWNLOADS.get(fmt)
    if kind is None:
        raise Http404(f"Exports are {', '.join(sorted(services.DOWNLOADS))}.")
    content, content_type = services.rendering_of(snapshot, kind)
    response = HttpResponse(content, content_type=content_type)
    name = f"agreement-{EXPORT_NAMES.get(fmt, 'report')}-{snapshot.study_id}-{snapshot.pk}"
    response["Content-Disposition"] = f'attachment; filename="{name}.{fmt}"'
    return response


def figure_response(snapshot: ReportSnapshot, key: str, fmt: str) -> HttpResponse:
    """Figure ``key`` of a stored snapshot as an SVG, PDF or 300-dpi PNG download."""
    if fmt not in plots.FIGURE_FORMATS:
        raise Http404(f"Figures are {', '.join(plots.FIGURE_FORMATS)}.")
    content = services.export_figure(snapshot, key, fmt)
    if content is None:
        raise Http404(f"This report has no figure {key!r}.")
    response = HttpResponse(content, content_type=plots.FIGURE_FORMATS[fmt][0])
    name = f"agreement-{snapshot.study_id}-{snapshot.pk}-{key}.{fmt}"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    if fmt == "svg":
        # matplotlib's SVG carries its own <style> and style attributes: allowed by hash
        return with_self_contained_policy(response, content)
    return response


#: The tidy score table's downloads: name -> (media type, what writes it, file name ending).
SCORE_FILES = {
    "csv": ("text/csv; charset=utf-8", services.scores_csv, "scores.csv"),
    "parquet": ("application/vnd.apache.parquet", services.scores_parquet, "scores.parquet"),
    "dictionary": ("text/markdown; charset=utf-8", None, "scores-dictionary.md"),
}


def scores_response(snapshot: ReportSnapshot, fmt: str) -> HttpResponse:
    """The snapshot's tidy score table (csv, parquet) or its data dictionary; 409 with the
    reason when the study's scores changed since the snapshot was computed."""
    if fmt not in SCORE_FILES:
        raise Http404(f"The score table downloads are {', '.join(SCORE_FILES)}.")
    content_type, write, ending = SCORE_FILES[fmt]
    try:
        content = services.scores_dictionary() if write is None else write(snapshot)
    except AgreementError as exc:
        return HttpResponse(str(exc), status=409, content_type="text/plain; charset=utf-8")
    response = HttpResponse(content, content_type=content_type)
    name = f"agreement-{snapshot.study_id}-{snapshot.pk}-{ending}"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response


@login_required
def report_scores(request: HttpRequest, study_id: int, report_id: int, fmt: str) -> HttpResponse:
    study, _ = get_study_for_user(user=request.user, study_id=study_id, allowed_roles=STUDY_READERS)
    return scores_response(_snapshot_of(study, report_id), fmt)


@login_required
def report_figure(
    request: HttpRequest, study_id: int, report_id: int, key: str, fmt: str
) -> HttpResponse:
    study, _ = get_study_for_user(user=request.user, study_id=study_id, allowed_roles=STUDY_READERS)
    # the results are read (deferred) only where the figure files are not stored yet
    return figure_response(_snapshot_of(study, report_id, with_results=False), key, fmt)


@login_required
def report_export(request: HttpRequest, study_id: int, report_id: int, fmt: str) -> HttpResponse:
    study, _ = get_study_for_user(user=request.user, study_id=study_id, allowed_roles=STUDY_READERS)
    return export_response(_snapshot_of(study, report_id, with_results=False), fmt)


@login_required
@require_POST
def recompute(request: HttpRequest, study_id: int, report_id: int) -> HttpResponse:
    study, _ = get_study_for_user(user=request.user, study_id=study_id, allowed_roles=STUDY_READERS)
    snapshot = _snapshot_of(study, report_id)
    status = input_status(study=study)
    if status["incomplete"] and request.POST.get("confirm_incomplete") != "1":
        messages.error(request, incomplete_message(status, how_to_confirm=CONFIRM_ON_PAGE))
        return redirect("agreement:report", study_id=study.pk, report_id=snapshot.pk)
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
