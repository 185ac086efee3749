"""The study archive as a download for the study's coordinators (agreement.archive)."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse

from agreement import archive
from annotation.access import Role, get_study_for_user


@login_required
def study_archive(request: HttpRequest, study_id: int) -> HttpResponse:
    """The whole study as one zip; coordinators only (it holds model names and every rating)."""
    study, _ = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=[Role.COORDINATOR]
    )
    response = HttpResponse(
        archive.export_study(study=study, actor=request.user), content_type="application/zip"
    )
    response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-archive.zip"'
    return response
