"""The page that imports a long file of ratings or machine scores, shared by the ratings
import (annotation) and the scores import (jury): upload, then the import job's progress and
outcome (the first problems by line and column, their count and the complete list as CSV,
or a summary of what was imported), and the download of that list."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import IO

from django.contrib.auth.decorators import login_required
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    StreamingHttpResponse,
)
from django.shortcuts import redirect, render
from django.views.decorators.csrf import csrf_protect

from annotation import imports
from annotation.access import Role, get_study_for_user
from annotation.errors import AnnotationError
from annotation.forms import LongFileForm
from annotation.imports.long_jobs import LONG_KINDS
from annotation.imports.longerrors import ERROR_COLUMNS, SHOWN_ERRORS, error_spool, spooled_rows
from annotation.models import ImportJob, RatingStudy
from medhelm_site.common.csv_export import csv_lines
from medhelm_site.domain_errors import add_to_form

# Starts the import of an upload (its content and name): imports.start_long_import with the
# page's kind and importer.
Starter = Callable[[IO[bytes], str], ImportJob]


@dataclass(frozen=True)
class LongImportPage:
    """What differs between the ratings page and the scores page."""

    kind: str  # "ratings" or "scores"
    columns: str  # the columns, as the page explains them
    export_url: str  # this study's export in the same format


@csrf_protect  # after the caller has put the upload limit in place
def long_import_page(
    request: HttpRequest,
    study: RatingStudy,
    size_limit: imports.UploadSizeLimit,
    *,
    page: LongImportPage,
    start: Starter,
) -> HttpResponse:
    """GET: the form, and with ?job=N that import's progress or outcome. POST: store the
    upload and run it here when it is small (the outcome answers, 400 if it failed), else
    queue it and redirect to its progress."""
    form = LongFileForm()
    job: ImportJob | None = None
    status = 200
    if request.GET.get("job"):
        raw = request.GET["job"]
        if not raw.isascii() or not raw.isdigit() or len(raw) > 18:
            return HttpResponseBadRequest('"job" must be the number of an import of this study.')
        job = ImportJob.objects.filter(study=study, kind=page.kind, pk=int(raw)).first()
        if job is None:
            raise Http404("No such import.")
    if request.method == "POST":
        form = LongFileForm(request.POST, request.FILES)
        status = 400
        if size_limit.refusal is not None:
            form.is_valid()
            form.errors.pop("file", None)
            add_to_form(form, size_limit.refusal)
        elif form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                job = start(upload, upload.name)
            except AnnotationError as exc:
                add_to_form(form, exc)
            else:
                if job.status not in imports.FINISHED:
                    return redirect(f"{request.path}?job={job.pk}")
                form = LongFileForm()
                status = 200 if job.status == ImportJob.Status.SUCCEEDED else 400
    return render(
        request,
        "annotation/long_import.html",
        {
            "study": study,
            "form": form,
            "page": page,
            "job": job,
            "progress": imports.long_import_progress(job) if job is not None else None,
            "max_upload_bytes": imports.max_upload_bytes(),
            "shown_errors": SHOWN_ERRORS,
        },
        status=status,
    )


@login_required
def import_errors(request: HttpRequest, study_id: int, job_id: int) -> HttpResponse:
    """Every problem of a failed ratings or scores import, as CSV (line, column, reason)."""
    study, _ = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=[Role.COORDINATOR]
    )
    job = ImportJob.objects.filter(study=study, pk=job_id, kind__in=LONG_KINDS).first()
    spool = error_spool(job_id)
    if job is None or job.status not in imports.FINISHED or not spool.exists():
        raise Http404("No error file for this import.")
    response = StreamingHttpResponse(
        csv_lines(ERROR_COLUMNS, spooled_rows(spool)), content_type="text/csv"
    )
    filename = f"study-{study.pk}-import-{job.pk}-errors.csv"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
