"""The two pages of a sign-in with the provider: start (off to the provider) and callback
(back from it). Whatever goes wrong ends on the login page saying what."""

from __future__ import annotations

import logging
import re
from typing import Any

from django.core.exceptions import SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.views.generic import View
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from medhelm_site.accounts.sso.backend import remember_refusal
from medhelm_site.accounts.sso.config import ProviderUnavailable, endpoints, sso_config
from medhelm_site.accounts.sso.options import oidc_setting

logger = logging.getLogger(__name__)

STANDARD_ERROR_CODE = re.compile(r"[a-z_]{1,40}")  # access_denied, login_required, ...


class SsoStartView(OIDCAuthenticationRequestView):
    """Off to the provider's authorization endpoint (state, nonce and PKCE kept in the
    session by mozilla-django-oidc)."""

    def __init__(self, **kwargs: Any) -> None:
        View.__init__(self, **kwargs)  # the endpoints are looked up in get()

    def get_settings(self, attr: str, *args: Any) -> Any:  # type: ignore[override]
        return oidc_setting(attr, *args)

    def get(self, request: HttpRequest) -> HttpResponse:
        config = sso_config()
        if config is None:
            raise Http404("Single sign-on is not configured.")
        try:
            self.OIDC_OP_AUTH_ENDPOINT = endpoints(config).authorization
        except ProviderUnavailable as exc:
            logger.warning("single sign-on: %s", exc)
            remember_refusal(
                request,
                f"{config.provider_name} cannot be reached right now. Try again in a "
                "moment, or log in with your username and password.",
            )
            return HttpResponseRedirect(reverse("login"))
        self.OIDC_RP_CLIENT_ID = config.client_id
        return super().get(request)


class SsoCallbackView(OIDCAuthenticationCallbackView):
    """Back from the provider: the code is exchanged and the user matched (SsoBackend)."""

    def get_settings(self, attr: str, *args: Any) -> Any:  # type: ignore[override]
        return oidc_setting(attr, *args)

    def get(self, request: HttpRequest) -> HttpResponse:
        config = sso_config()
        if config is None:
            raise Http404("Single sign-on is not configured.")
        if request.GET.get("error"):
            # Only the error code, and only a well-formed one: a link can carry any text in
            # error_description, which is not shown on our page.
            code = request.GET["error"]
            code = code if STANDARD_ERROR_CODE.fullmatch(code) else "unknown error"
            remember_refusal(request, f"{config.provider_name} did not sign you in ({code}).")
        elif "state" not in request.GET or "code" not in request.GET:
            remember_refusal(request, f"The answer from {config.provider_name} was incomplete.")
        elif request.GET["state"] not in request.session.get("oidc_states", {}):
            # Another tab's sign-in, an expired session, or a replayed answer.
            remember_refusal(
                request,
                "This sign-in was started in another window, or has expired. Start it again.",
            )
            return HttpResponseRedirect(reverse("login"))
        try:
            return super().get(request)
        except SuspiciousOperation as exc:
            logger.warning("single sign-on: callback refused: %s", exc)
            remember_refusal(request, "This sign-in could not be checked. Start it again.")
            return HttpResponseRedirect(reverse("login"))
