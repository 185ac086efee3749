"""Jury pages: runs of a study, one run's progress and health, the prompt template."""

from __future__ import annotations

from typing import IO

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    JsonResponse,
    StreamingHttpResponse,
)
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from annotation import imports
from annotation.access import STUDY_READERS, Role, get_study_for_user
from annotation.models import ImportJob, RatingStudy
from annotation.views.long_imports import LongImportPage, long_import_page
from jury import metric_jobs, selectors, services
from jury.errors import JuryError
from jury.forms import PromptForm, StartRunForm
from jury.models import JuryRun
from jury.score_imports import LONG_SCORE_COLUMNS, scores_long_rows
from jury.score_imports import import_scores as import_score_file
from medhelm_site.common.csv_export import csv_lines
from medhelm_site.domain_errors import add_to_form


def _run_of(study: RatingStudy, run_id: int) -> JuryRun:
    """The study's run, or 404 (a run of another study is not found)."""
    run = selectors.study_run(study=study, run_id=run_id)
    if run is None:
        raise Http404("No such jury run.")
    return run


@login_required
def runs(request: HttpRequest, study_id: int) -> HttpResponse:
    """The study's recent runs; a coordinator starts a new one here."""
    study, roles = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=STUDY_READERS
    )
    is_coordinator = Role.COORDINATOR in roles
    form = StartRunForm(request.POST or None, study=study)
    if request.method == "POST":
        if not is_coordinator:
            return HttpResponse("Only coordinators start jury runs.", status=403)
        if form.is_valid():
            try:
                run = services.start_run(
                    study=study,
                    judges=form.cleaned_data["judges"],
                    template=form.cleaned_data["template"],
                    filters=form.filters(),
                    actor=request.user,
                )
            except JuryError as exc:
                add_to_form(form, exc)
            else:
                return redirect("jury:run", study_id=study.pk, run_id=run.pk)
    rows = selectors.recent_runs(study=study)
    return render(
        request,
        "jury/runs.html",
        {
            "study": study,
            "rows": rows,
            "form": form,
            "is_coordinator": is_coordinator,
            "back": request.get_full_path(),
            **metric_jobs.metric_panel(study=study),
        },
    )


@login_required
@require_POST
def start_metrics(request: HttpRequest, study_id: int) -> HttpResponse:
    """Queue ROUGE-L and/or BERTScore over the study's items (coordinators only), then go
    back to the page the form was on (the jury page, or a report's status panel)."""
    study, _ = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=[Role.COORDINATOR]
    )
    back = request.POST.get("next", "")
    if not url_has_allowed_host_and_scheme(
        back, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        back = reverse("jury:runs", args=[study.pk])
    try:
        job = metric_jobs.start_metric_job(
            study=study, actor=request.user, metrics=request.POST.getlist("metric")
        )
    except JuryError as exc:
        messages.error(request, f"Metrics not started: {exc.message}.")
    else:
        names = ", ".join(metric_jobs.LABELS.get(m, m) for m in job.metrics)
        messages.success(
            request,
            f"{names} queued: a worker on the metrics queue computes them; the status below "
            "shows when they are done or why they failed.",
        )
    return redirect(back)


@login_required
def run_detail(request: HttpRequest, study_id: int, run_id: int) -> HttpResponse:
    """One run's progress and each judge's health."""
    study, roles = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=STUDY_READERS
    )
    run = _run_of(study, run_id)
    return render(
        request,
        "jury/run.html",
        {
            "study": study,
            "run": run,
            "live": selectors.run_status(run=run),
            "errors": selectors.run_errors(run=run),
            "outages": selectors.provider_outages(run=run),
            "flags": selectors.run_flags(run=run),
            "is_coordinator": Role.COORDINATOR in roles,
        },
    )


@login_required
def run_status(request: HttpRequest, study_id: int, run_id: int) -> JsonResponse:
    """What the run page polls every few seconds instead of reloading: counts, state, time
    left and the actions that apply (jury.selectors.run_status)."""
    study, _ = get_study_for_user(user=request.user, study_id=study_id, allowed_roles=STUDY_READERS)
    run = _run_of(study, run_id)
    response = JsonResponse(selectors.run_status(run=run))
    response["Cache-Control"] = "no-store"
    return response


@login_required
@require_POST
def run_action(request: HttpRequest, study_id: int, run_id: int, action: str) -> HttpResponse:
    """Cancel or resume a run (coordinators only)."""
    study, _ = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=[Role.COORDINATOR]
    )
    run = _run_of(study, run_id)
    if action == "cancel":
        services.cancel_run(run=run, actor=request.user)
        messages.success(
            request, "Run cancelled: calls in flight finish; the rest wait for a resume."
        )
    elif action == "resume":
        n = services.resume_run(run=run, actor=request.user)
        messages.success(request, f"{n} calls sent again (missing or failed).")
        truncated = selectors.truncated_calls(run=run)
        if truncated:
            messages.warning(
                request,
                f"{truncated} truncated calls not sent again: the same request would be cut "
                "again. Raise their judge's max_tokens, then resume.",
            )
    else:
        raise Http404("Unknown action.")
    return redirect("jury:run", study_id=study.pk, run_id=run.pk)


@login_required
def run_calls_csv(request: HttpRequest, study_id: int, run_id: int) -> HttpResponse:
    """Every call of a run with its status, tokens, cost and latency."""
    study, _ = get_study_for_user(user=request.user, study_id=study_id, allowed_roles=STUDY_READERS)
    run = _run_of(study, run_id)
    response = StreamingHttpResponse(
        csv_lines(selectors.CALL_COLUMNS, selectors.call_rows(run=run)), content_type="text/csv"
    )
    response["Content-Disposition"] = f'attachment; filename="jury-run-{run.pk}-calls.csv"'
    return response


@login_required
def run_attempts_csv(request: HttpRequest, study_id: int, run_id: int) -> HttpResponse:
    """Every request sent for a run's calls, over all executions: outcome, HTTP status,
    latency, tokens, finish reason and error."""
    study, _ = get_study_for_user(user=request.user, study_id=study_id, allowed_roles=STUDY_READERS)
    run = _run_of(study, run_id)
    response = StreamingHttpResponse(
        csv_lines(selectors.ATTEMPT_COLUMNS, selectors.attempt_rows(run=run)),
        content_type="text/csv",
    )
    response["Content-Disposition"] = f'attachment; filename="jury-run-{run.pk}-attempts.csv"'
    return response


@login_required
def prompt(request: HttpRequest, study_id: int) -> HttpResponse:
    """The study's prompt: every save is a new version; runs keep the version they used."""
    study, roles = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=STUDY_READERS
    )
    default = services.ensure_default_prompt_template()
    current = selectors.latest_prompt_template(study=study) or default
    form = PromptForm(
        request.POST or None,
        initial={
            "name": current.name if current.study_id else f"study-{study.pk}",
            "system_text": current.system_text,
            "body": current.body,
        },
    )
    if request.method == "POST":
        if Role.COORDINATOR not in roles:
            return HttpResponse("Only coordinators edit the prompt.", status=403)
        if form.is_valid():
            try:
                template = services.create_prompt_version(
                    study=study, actor=request.user, **form.cleaned_data
                )
            except JuryError as exc:
                add_to_form(form, exc)
            else:
                messages.success(request, f"Saved as {template}.")
                return redirect("jury:prompt", study_id=study.pk)
    versions = selectors.prompt_versions(study=study)
    return render(
        request,
        "jury/prompt.html",
        {
            "study": study,
            "form": form,
            "current": current,
            "versions": versions,
            "is_coordinator": Role.COORDINATOR in roles,
        },
    )


SCORES_PAGE_COLUMNS = (
    "external_id, model (the item), kind (judge or metric), scorer (the judge's name, "
    "created as an imported judge if the site has none by that name; or the metric's name, "
    "any name, with @scorer-model if it names one), criterion (a rubric key for a judge; "
    "empty or overall for a metric), value, and optionally comment (a judge's explanation)"
)


@login_required
@csrf_exempt  # the token is checked by long_import_page, once the upload limit is in place
def import_scores(request: HttpRequest, study_id: int) -> HttpResponse:
    """Judge verdicts and metric scores computed elsewhere, from a long file."""
    study, _ = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=[Role.COORDINATOR]
    )
    size_limit = imports.limit_upload_size(request)
    page = LongImportPage(
        kind="scores",
        columns=SCORES_PAGE_COLUMNS,
        export_url=reverse("jury:export-scores-long", args=[study.pk]),
    )

    def start(content: IO[bytes], name: str) -> ImportJob:
        return imports.start_long_import(
            study=study,
            kind=ImportJob.Kind.SCORES,
            uploaded_name=name,
            content=content,
            actor=request.user,
            importer=import_score_file,
        )

    return long_import_page(request, study, size_limit, page=page, start=start)


@login_required
def export_scores_long(request: HttpRequest, study_id: int) -> HttpResponse:
    """The machine scores the score table uses, in the long format the scores import reads."""
    study, _ = get_study_for_user(user=request.user, study_id=study_id, allowed_roles=STUDY_READERS)
    response = StreamingHttpResponse(
        csv_lines(LONG_SCORE_COLUMNS, scores_long_rows(study=study)), content_type="text/csv"
    )
    response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-scores-long.csv"'
    return response
