"""What a locked-out login sees (django-axes' AXES_LOCKOUT_CALLABLE): the login page, or a
JSON body for the API, saying the account is locked and when it unlocks."""

from __future__ import annotations

from typing import Any

from axes.helpers import get_client_ip_address, get_client_username
from django.conf import settings
from django.contrib.auth.forms import AuthenticationForm
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import render
from django.utils import timezone

from medhelm_site.accounts.selectors import lockout_of
from medhelm_site.accounts.views import sso_login_context

# Too Many Requests: the API's clients back off on it as on any rate limit.
STATUS = 429


def lockout_message(*, ends_at_text: str) -> str:
    return (
        f"This account is locked after {settings.AXES_FAILURE_LIMIT} failed log-ins from "
        f"this address. It unlocks at {ends_at_text}, or sooner if staff or a coordinator "
        "of one of your studies unlocks it."
    )


def lockout_response(
    request: HttpRequest,
    original_response: HttpResponse | None = None,
    credentials: dict[str, Any] | None = None,
) -> HttpResponse:
    username = get_client_username(request, credentials)
    ip_address = getattr(request, "axes_ip_address", None) or get_client_ip_address(request)
    lockout = lockout_of(username=username, ip_address=ip_address)
    ends_at = (
        lockout.ends_at if lockout is not None else timezone.now() + settings.AXES_COOLOFF_TIME
    )
    local = timezone.localtime(ends_at)
    ends_at_text = f"{local:%Y-%m-%d %H:%M} {local.tzname()}"
    message = lockout_message(ends_at_text=ends_at_text)
    retry_after = max(1, int((ends_at - timezone.now()).total_seconds()))
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse(
            {"detail": message, "locked": True, "unlocks_at": ends_at.isoformat()}, status=STATUS
        )
    else:
        response = render(
            request,
            "registration/login.html",
            {
                "locked_message": message,
                "form": AuthenticationForm(request),
                "next": request.POST.get("next", ""),
                **sso_login_context(request),
            },
            status=STATUS,
        )
    response["Retry-After"] = str(retry_after)
    return response
