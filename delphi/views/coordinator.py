"""Helpers shared by the coordinator's pages (views/setup.py, panelists.py, rounds.py,
release.py, exports.py), and two rule texts those pages show."""

from __future__ import annotations

from typing import Any

from django.forms import Form
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.utils.http import url_has_allowed_host_and_scheme

from delphi import services
from delphi.models import DelphiStudy, Round, TaxonomyVersion


def base_url(request: HttpRequest) -> str:
    """Links in invitation and reminder e-mails point back at the host the coordinator used."""
    return request.build_absolute_uri("/")


def back(request: HttpRequest, default: str) -> HttpResponse:
    """Back to the page the form was on (a local `next`), else `default`."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return redirect(target)
    return redirect(default)


def form_problems(form: Form) -> str:
    """A bound form's errors in one line, for a message on the page it redirects to."""
    parts = []
    for name, errors in form.errors.items():
        label = form.fields[name].label if name in form.fields else ""
        parts.append(
            f"{label or name}: {' '.join(errors)}" if name != "__all__" else " ".join(errors)
        )
    return "; ".join(parts)


def round_of(study: DelphiStudy, number: int) -> Round:
    return get_object_or_404(Round, study=study, number=number)


def draft_taxonomy(data: dict[str, Any]) -> TaxonomyVersion:
    """The draft taxonomy a TaxonomySourceForm chose, importing an uploaded file."""
    source = data["taxonomy_source"]
    if source == "fixture":
        return services.ensure_medhelm_taxonomy()
    if source == "version":
        return data["taxonomy_version"]
    return services.create_taxonomy_version(
        tree=data["taxonomy_tree"], source=TaxonomyVersion.Source.IMPORT
    )
