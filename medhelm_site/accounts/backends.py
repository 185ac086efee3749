"""The login throttle's authentication backend (django-axes)."""

from __future__ import annotations

from typing import Any

from axes.backends import AxesStandaloneBackend
from django.conf import settings
from django.http import HttpRequest


class ThrottledLoginBackend(AxesStandaloneBackend):
    """Refuses a password check from a user and address that failed too often.

    Every web login passes its request (the login page, the admin's login, the API's token
    endpoint) and is throttled. A password checked with no request at all (a shell, a
    management command, the test client's login()) has no client to throttle, so it is let
    through to the next backend instead of raising as axes' own backend does.
    """

    def authenticate(
        self,
        request: HttpRequest | None,
        username: str | None = None,
        password: str | None = None,
        **kwargs: Any,
    ) -> None:
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def client_ip(request: HttpRequest) -> str | None:
    """The client's address for the throttle: REMOTE_ADDR, or behind LOGIN_PROXY_COUNT
    proxies the address the first of them saw (the last ones of X-Forwarded-For are theirs,
    anything before is whatever the client sent)."""
    count = settings.LOGIN_PROXY_COUNT
    if count <= 0:
        return request.META.get("REMOTE_ADDR")
    forwarded = [p.strip() for p in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    forwarded = [p for p in forwarded if p]
    if len(forwarded) < count:
        return request.META.get("REMOTE_ADDR")
    return forwarded[-count]


def is_not_a_password_check(request: HttpRequest, credentials: dict[str, Any] | None) -> bool:
    """axes' whitelist (AXES_WHITELIST_CALLABLE): an authentication without a password is
    not throttled. A single sign-on callback refused (e-mail not verified, unknown) guessed
    no password; counted, five of them would lock every sign-in from that address under an
    empty username."""
    return credentials is not None and "password" not in credentials
