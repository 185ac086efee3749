"""The coordinator's downloads: data files, the protocol, the report and the checklist."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render

from delphi import exports
from delphi.access import get_study_for_coordinator
from delphi.forms import sentence
from delphi.services import DelphiError
from medhelm_site.csp import with_self_contained_policy


@login_required
def export(request: HttpRequest, study_id: int, name: str) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    if name not in exports.EXPORT_NAMES:
        raise Http404("No such export.")
    try:
        content, content_type, filename = exports.render_export(study=study, name=name)
    except DelphiError as exc:
        # E.g. the protocol asked for before it was locked: say why, not a 500.
        return render(
            request,
            "delphi/export_error.html",
            {"study": study, "name": name, "message": sentence(exc.message)},
            status=400,
        )
    response = HttpResponse(content, content_type=content_type)
    # The HTML report and checklist open in the browser (their own pages, no scripts); the
    # data files and the PDF download.
    disposition = "inline" if name.endswith(".html") else "attachment"
    response["Content-Disposition"] = f'{disposition}; filename="{filename}"'
    if name.endswith(".html"):
        # standalone documents (inline style and SVG, no static files): a policy of their own
        return with_self_contained_policy(response, content)
    return response
