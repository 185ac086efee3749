"""The audit log page and its CSV export: who changed what and when, for the coordinators
of a study (their studies only) and staff (every row). Reads in annotation.selectors.audit."""

from __future__ import annotations

from datetime import date

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.http import HttpRequest, HttpResponse, QueryDict, StreamingHttpResponse
from django.shortcuts import render
from django.utils import timezone

from annotation import selectors
from medhelm_site.common.csv_export import csv_lines
from medhelm_site.common.querying import BadParameter, parse_id

PAGE_SIZE = 50


def _date(raw: str | None, *, field: str) -> date | None:
    text = (raw or "").strip()
    if not text:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise BadParameter(
            f"{field} must be a date (YYYY-MM-DD), got {raw!r}", field=field
        ) from None


def _optional_id(raw: str | None, *, field: str) -> int | None:
    return None if not (raw or "").strip() else parse_id(raw, field=field)


def _filters(query: QueryDict) -> selectors.AuditFilters:
    filters = selectors.AuditFilters(
        study_id=_optional_id(query.get("study"), field="study"),
        actor_id=_optional_id(query.get("user"), field="user"),
        action=(query.get("action") or "").strip() or None,
        since=_date(query.get("since"), field="since"),
        until=_date(query.get("until"), field="until"),
    )
    if filters.since and filters.until and filters.since > filters.until:
        raise BadParameter("since must not be after until", field="since")
    return filters


def _scope_and_filters(
    request: HttpRequest,
) -> tuple[selectors.AuditScope, selectors.AuditFilters]:
    """Who may read what, and what they ask for: 403 for anyone who coordinates no study
    (clinicians, researchers) and for a study filter naming a study they do not coordinate."""
    scope = selectors.audit_scope(user=request.user)
    if not scope.readable:
        raise PermissionDenied("The audit log is for study coordinators and staff.")
    filters = _filters(request.GET)
    if filters.study_id is not None and filters.study_id not in scope.study_ids:
        raise PermissionDenied("You do not coordinate that study, so its log is not yours to read.")
    return scope, filters


@login_required
def audit_log(request: HttpRequest) -> HttpResponse:
    scope, filters = _scope_and_filters(request)
    page = Paginator(selectors.audit_events(scope=scope, filters=filters), PAGE_SIZE).get_page(
        request.GET.get("page")
    )
    query = request.GET.copy()
    query.pop("page", None)
    return render(
        request,
        "annotation/audit_log.html",
        {
            "page": page,
            "rows": selectors.audit_rows(events=list(page.object_list)),
            "filters": filters,
            "scope": scope,
            "actions": selectors.audit_actions(scope=scope),
            "actors": selectors.audit_actors(scope=scope),
            "query": query.urlencode(),
            "time_zone": timezone.get_current_timezone_name(),
        },
    )


@login_required
def audit_log_csv(request: HttpRequest) -> HttpResponse:
    """Every row the page's filters match (not only one page), through the one CSV writer."""
    scope, filters = _scope_and_filters(request)
    events = selectors.audit_events(scope=scope, filters=filters)
    response = StreamingHttpResponse(
        csv_lines(selectors.AUDIT_COLUMNS, selectors.audit_csv_rows(events=events)),
        content_type="text/csv",
    )
    name = f"study-{filters.study_id}-audit.csv" if filters.study_id else "audit.csv"
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
