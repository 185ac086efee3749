"""While the database cannot be reached (restarted, failed over, out of connections), every
request is answered 503 with a message saying so and a Retry-After, never a 500 traceback
page: the rating page's JavaScript and API clients retry a 5xx, and nothing they sent was
stored, so retrying is the right thing to do. Django opens a fresh connection on the next
request (CONN_HEALTH_CHECKS in settings), so the site recovers on its own."""

from __future__ import annotations

import html
import logging
import sys

from django.db import InterfaceError, OperationalError
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views import defaults

logger = logging.getLogger(__name__)

RETRY_AFTER_SECONDS = 5
MESSAGE = "The database is unavailable for a moment; nothing was saved. Retry in a few seconds."
DATABASE_ERRORS = (OperationalError, InterfaceError)


def wants_json(request: HttpRequest) -> bool:
    """An API call or a page's fetch (JSON sent or asked for), as opposed to a page load."""
    return (
        request.path.startswith("/api/")
        or "json" in request.META.get("HTTP_ACCEPT", "")
        or "json" in request.META.get("CONTENT_TYPE", "")
    )


def database_unavailable(request: HttpRequest) -> HttpResponse:
    """The 503 itself: JSON ({"detail": ...}, as DRF's errors) or a bare page. The page uses no
    template: a base template reads the session and the user, which needs the database."""
    if wants_json(request):
        response: HttpResponse = JsonResponse({"detail": MESSAGE}, status=503)
    else:
        # A way on from here, without script (the CSP allows none inline): the same address
        # again, which for a form that was posted (the rating page's Submit) reopens the form,
        # where the rating page restores what this browser kept.
        again = html.escape(request.get_full_path(), quote=True)
        sent = (
            " What you sent was not saved: send it again from there."
            if request.method not in ("GET", "HEAD")
            else ""
        )
        response = HttpResponse(
            '<!doctype html><html lang="en"><meta charset="utf-8">'
            '<meta name="viewport" content="width=device-width, initial-scale=1">'
            "<title>Database unavailable</title>"
            f"<h1>Database unavailable</h1><p>{html.escape(MESSAGE)}</p>"
            f'<p><a href="{again}">Open this page again</a> in a few seconds.{sent}</p>',
            status=503,
        )
    response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response


class DatabaseUnavailableMiddleware:
    """A view that met a database outage answers 503 (see the module's docstring)."""

    def __init__(self, get_response) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, DATABASE_ERRORS):
            return None
        logger.warning(
            "database unavailable during %s %s: %s",
            request.method,
            request.path,
            type(exception).__name__,
        )
        return database_unavailable(request)


def server_error_page(request: HttpRequest) -> HttpResponse:
    """handler500: an outage met outside a view (the session or the user loaded by a
    middleware) is a 503 too; Django calls this inside its `except`, so the error is at hand."""
    if isinstance(sys.exc_info()[1], DATABASE_ERRORS):
        return database_unavailable(request)
    return defaults.server_error(request)
