"""mozilla-django-oidc reads its options by name (OIDC_*); here they come from sso.config
(MEDHELM_OIDC_* settings and discovery) instead of module-level Django settings."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from mozilla_django_oidc.utils import import_from_settings

from medhelm_site.accounts.sso.config import sso_config

# Options that are the same for every provider.
FIXED = {
    "OIDC_USE_PKCE": True,  # the code is useless to anyone who intercepts it
    "OIDC_USE_NONCE": True,
    "OIDC_STORE_ID_TOKEN": True,  # the id_token_hint of the provider's logout
    "OIDC_TIMEOUT": 10,
    "OIDC_AUTHENTICATION_CALLBACK_URL": "sso-callback",
}


def oidc_setting(attr: str, *default: Any) -> Any:
    if attr in FIXED:
        return FIXED[attr]
    config = sso_config()
    if config is not None:
        if attr == "OIDC_RP_CLIENT_ID":
            return config.client_id
        if attr == "OIDC_RP_CLIENT_SECRET":
            return config.client_secret
        if attr == "OIDC_RP_SCOPES":
            return config.scopes
        if attr == "OIDC_RP_SIGN_ALGO":
            return config.sign_algo
    if attr == "LOGIN_REDIRECT_URL_FAILURE":
        return reverse("login")
    return import_from_settings(attr, *default)
