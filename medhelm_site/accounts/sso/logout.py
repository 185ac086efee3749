"""Ending the session at the provider too: after our logout, the browser goes to the
provider's end_session_endpoint (OpenID Connect RP-Initiated Logout 1.0) and comes back to
our login page. Without it, "Sign in with ..." would sign the same person straight back in
on a shared ward computer."""

from __future__ import annotations

import logging
from urllib.parse import urlencode

from medhelm_site.accounts.sso.config import ProviderUnavailable, endpoints, sso_config

logger = logging.getLogger(__name__)

ID_TOKEN_SESSION_KEY = "oidc_id_token"  # where mozilla-django-oidc keeps it (OIDC_STORE_ID_TOKEN)


def provider_logout_url(*, id_token: str | None, return_to: str) -> str | None:
    """Where to send the browser to end its session at the provider, or None: not signed
    in through it, provider logout off, or the provider has no end_session_endpoint."""
    config = sso_config()
    if config is None or not config.provider_logout or not id_token:
        return None
    try:
        end_session = endpoints(config).end_session
    except ProviderUnavailable as exc:
        logger.warning("single sign-on: logged out here only: %s", exc)
        return None
    if not end_session:
        return None
    query = urlencode(
        {
            "id_token_hint": id_token,
            "post_logout_redirect_uri": return_to,
            "client_id": config.client_id,
        }
    )
    return f"{end_session}{'&' if '?' in end_session else '?'}{query}"
