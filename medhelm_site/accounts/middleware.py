"""Sessions end after SESSION_IDLE_SECONDS without a request."""

from __future__ import annotations

import time
from collections.abc import Callable

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import SESSION_KEY, logout
from django.http import HttpRequest, HttpResponse

LAST_SEEN = "medhelm_last_seen"


class IdleSessionMiddleware:
    """Logs out a session whose last request is older than SESSION_IDLE_SECONDS.

    The time of the last request is written at most once a minute (not on every request),
    and each write also renews the cookie, whose age is the idle time: a browser drops the
    cookie of an idle session by itself, and the server refuses it even if it does not.
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.META.get("HTTP_AUTHORIZATION", "").startswith("Token "):
            # An API call authenticated by its token: no session to keep alive (reading it
            # would cost every such call a query), and a bad token is refused with 401.
            return self.get_response(request)
        session = getattr(request, "session", None)
        if session is not None and SESSION_KEY in session:
            idle = settings.SESSION_IDLE_SECONDS
            now = int(time.time())
            last = session.get(LAST_SEEN)
            if last is not None and now - int(last) > idle:
                logout(request)
                messages.info(
                    request,
                    f"You were logged out after {idle // 60} minutes without activity.",
                )
            elif last is None or now - int(last) >= min(60, idle // 10 or 1):
                session[LAST_SEEN] = now
        return self.get_response(request)
