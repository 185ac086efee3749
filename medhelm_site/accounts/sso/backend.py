"""The authentication backend of single sign-on: mozilla-django-oidc's code flow (token,
signature, nonce, PKCE), with the provider's settings from sso.config, the ID token's issuer
and audience checked, and the user found by sso.matching. A refusal or a provider that does
not answer ends on the login page with the reason (sso.views.REFUSAL_SESSION_KEY)."""

from __future__ import annotations

import logging
from typing import Any

import requests
from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from medhelm_site.accounts.sso.config import ProviderUnavailable, endpoints, sso_config
from medhelm_site.accounts.sso.matching import SsoRefused, match_user
from medhelm_site.accounts.sso.options import oidc_setting

logger = logging.getLogger(__name__)

REFUSAL_SESSION_KEY = "sso_refusal"


def remember_refusal(request: HttpRequest, message: str) -> None:
    """Keep the reason a sign-in failed for the login page that comes next."""
    request.session[REFUSAL_SESSION_KEY] = message


class SsoBackend(OIDCAuthenticationBackend):
    """Lets in the account bound to the provider's user, or at first the one whose e-mail
    the provider verified (sso.matching). Answers None to
    anything that is not a provider's callback (password logins go to the other backends)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Django makes a backend for every authenticate(), password logins included: the
        # provider's endpoints are looked up only when a sign-in comes back (authenticate).
        self.UserModel = get_user_model()

    def get_settings(self, attr: str, *args: Any) -> Any:  # type: ignore[override]
        return oidc_setting(attr, *args)

    def authenticate(self, request: HttpRequest | None, **kwargs: Any) -> AbstractBaseUser | None:
        config = sso_config()
        if config is None or request is None or "password" in kwargs or "username" in kwargs:
            return None
        if not request.GET.get("code") or not request.GET.get("state"):
            return None
        self.config = config
        try:
            found = endpoints(config)
            self.OIDC_OP_TOKEN_ENDPOINT = found.token
            self.OIDC_OP_USER_ENDPOINT = found.userinfo
            self.OIDC_OP_JWKS_ENDPOINT = found.jwks
            self.OIDC_RP_CLIENT_ID = config.client_id
            self.OIDC_RP_CLIENT_SECRET = config.client_secret
            self.OIDC_RP_SIGN_ALGO = config.sign_algo
            self.OIDC_RP_IDP_SIGN_KEY = None
            return super().authenticate(request, **kwargs)
        except SsoRefused as refused:
            remember_refusal(request, refused.message)
        except (ProviderUnavailable, requests.RequestException, ValueError) as exc:
            logger.warning("single sign-on: the provider did not answer as expected: %s", exc)
            remember_refusal(
                request,
                f"We could not finish signing you in with {config.provider_name}: its server "
                "did not answer as expected. Try again in a moment, or log in with your "
                "username and password.",
            )
        except SuspiciousOperation as exc:
            logger.warning("single sign-on: the provider's answer was refused: %s", exc)
            remember_refusal(
                request,
                f"The answer from {config.provider_name} could not be verified, so you are "
                "not signed in. Try again; if it happens again, tell your IT department.",
            )
        return None

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        """The signature and nonce (mozilla-django-oidc), then the issuer and audience: an
        ID token made by another provider or for another site is refused."""
        payload = super().verify_token(token, **kwargs)
        if self.config.issuer and str(payload.get("iss", "")).rstrip("/") != self.config.issuer:
            raise SuspiciousOperation(f"ID token issuer {payload.get('iss')!r} is not ours")
        audience = payload.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if self.config.client_id not in audiences:
            raise SuspiciousOperation(f"ID token audience {audience!r} is not this site")
        return payload

    def get_or_create_user(
        self, access_token: str, id_token: str, payload: dict[str, Any]
    ) -> AbstractBaseUser:
        claims = self.get_userinfo(access_token, id_token, payload)
        # OpenID Connect Core 5.3.2: userinfo about another subject must not be used.
        if claims.get("sub") != payload.get("sub"):
            raise SuspiciousOperation("userinfo subject differs from the ID token's")
        return match_user(config=self.config, claims=claims, issuer=payload.get("iss"))
