"""The page that imports a long file of ratings or machine scores, shared by the ratings
import (annotation) and the scores import (jury): upload, every problem by line and column,
or a summary of what was imported."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.views.decorators.csrf import csrf_protect

from annotation import imports
from annotation.errors import AnnotationError, LongFileRefused
from annotation.forms import LongFileForm
from annotation.models import RatingStudy
from annotation.services import LongImportSummary
from medhelm_site.domain_errors import add_to_form

Importer = Callable[[bytes, str], LongImportSummary]


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
    importer: Importer,
) -> HttpResponse:
    form = LongFileForm()
    summary: LongImportSummary | None = None
    errors: list = []
    status = 200
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
                summary = importer(upload.read(), upload.name)
            except LongFileRefused as exc:
                errors = exc.errors
            except AnnotationError as exc:
                add_to_form(form, exc)
            else:
                status = 200
                form = LongFileForm()
    return render(
        request,
        "annotation/long_import.html",
        {
            "study": study,
            "form": form,
            "page": page,
            "summary": summary,
            "errors": errors,
            "max_upload_bytes": imports.max_upload_bytes(),
        },
        status=status,
    )
