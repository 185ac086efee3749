"""The OpenID provider's settings (settings.MEDHELM_OIDC_*), and its endpoints: the ones set
explicitly, else those of its discovery document, fetched when first needed and kept."""

from __future__ import annotations

import threading
from dataclasses import dataclass

import requests
from django.conf import settings

DISCOVERY_PATH = "/.well-known/openid-configuration"
TIMEOUT_SECONDS = 10


class ProviderUnavailable(Exception):
    """The provider's discovery document could not be read or is not usable."""


@dataclass(frozen=True)
class Endpoints:
    authorization: str
    token: str
    userinfo: str
    jwks: str
    end_session: str  # "" when the provider has none


@dataclass(frozen=True)
class SsoConfig:
    provider_name: str
    issuer: str
    client_id: str
    client_secret: str
    scopes: str
    sign_algo: str
    create_users: bool
    provider_logout: bool
    explicit: dict[str, str]  # endpoint name -> URL set in the settings
    # Staff and superusers are found by their bound subject only, unless this allows their
    # first sign-in to match by e-mail (MEDHELM_OIDC_MATCH_STAFF_BY_EMAIL).
    match_staff_by_email: bool = False


def sso_config() -> SsoConfig | None:
    """The provider's settings, or None when single sign-on is off (no client id set)."""
    if not settings.MEDHELM_OIDC_CLIENT_ID:
        return None
    return SsoConfig(
        provider_name=settings.MEDHELM_OIDC_PROVIDER_NAME,
        issuer=settings.MEDHELM_OIDC_ISSUER.rstrip("/"),
        client_id=settings.MEDHELM_OIDC_CLIENT_ID,
        client_secret=settings.MEDHELM_OIDC_CLIENT_SECRET,
        scopes=settings.MEDHELM_OIDC_SCOPES,
        sign_algo=settings.MEDHELM_OIDC_SIGN_ALGO,
        create_users=settings.MEDHELM_OIDC_CREATE_USERS,
        provider_logout=settings.MEDHELM_OIDC_PROVIDER_LOGOUT,
        explicit={k: v for k, v in settings.MEDHELM_OIDC_ENDPOINTS.items() if v},
        match_staff_by_email=settings.MEDHELM_OIDC_MATCH_STAFF_BY_EMAIL,
    )


_discovered: dict[str, dict] = {}
_lock = threading.Lock()


def _discovery(issuer: str) -> dict:
    """The issuer's discovery document, fetched once per process (it changes rarely; a
    restart picks up a change)."""
    with _lock:
        if issuer in _discovered:
            return _discovered[issuer]
    url = issuer + DISCOVERY_PATH
    try:
        response = requests.get(url, timeout=TIMEOUT_SECONDS)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise ProviderUnavailable(f"could not read {url}: {exc}") from exc
    if not isinstance(document, dict) or document.get("issuer", "").rstrip("/") != issuer:
        raise ProviderUnavailable(
            f"{url} names issuer {document.get('issuer') if isinstance(document, dict) else None!r}, "
            f"not the configured MEDHELM_OIDC_ISSUER {issuer!r}"
        )
    with _lock:
        _discovered[issuer] = document
    return document


def forget_discovery() -> None:
    """Drop the fetched documents (tests start a new provider on a new port)."""
    with _lock:
        _discovered.clear()


_DISCOVERY_KEYS = {
    "authorization": "authorization_endpoint",
    "token": "token_endpoint",
    "userinfo": "userinfo_endpoint",
    "jwks": "jwks_uri",
    "end_session": "end_session_endpoint",
}


def endpoints(config: SsoConfig) -> Endpoints:
    """The provider's endpoints: explicit settings first, discovery for the rest."""
    found = dict(config.explicit)
    missing = [name for name in _DISCOVERY_KEYS if name not in found]
    if missing and config.issuer:
        document = _discovery(config.issuer)
        for name in missing:
            found[name] = document.get(_DISCOVERY_KEYS[name], "")
    absent = [n for n in ("authorization", "token", "userinfo", "jwks") if not found.get(n)]
    if absent:
        raise ProviderUnavailable(f"the provider's {', '.join(absent)} endpoint is not known")
    return Endpoints(**{name: found.get(name, "") for name in _DISCOVERY_KEYS})
