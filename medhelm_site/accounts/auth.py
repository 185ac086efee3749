"""API token authentication: knox's hashed, expiring tokens that also end with a password
change (the token remembers the password it was issued under)."""

from __future__ import annotations

from typing import Any

from django.utils import timezone
from django.utils.crypto import constant_time_compare
from knox.auth import TokenAuthentication
from rest_framework import exceptions

from medhelm_site.accounts.models import ApiToken


class ApiTokenAuthentication(TokenAuthentication):
    """`Authorization: Token <secret>`. A token is refused, and deleted, once it has
    expired (knox) or once its owner's password changed since it was issued."""

    def validate_user(self, auth_token: ApiToken) -> tuple[Any, ApiToken]:
        user, token = super().validate_user(auth_token)
        if not constant_time_compare(token.password_fingerprint, user.get_session_auth_hash()):
            token.delete()
            raise exceptions.AuthenticationFailed(
                "This token was issued before the password changed; create a new one."
            )
        return user, token

    def _cleanup_token(self, auth_token: ApiToken) -> bool:
        """An expired token is deleted and refused. Only this token is looked at: knox also
        reads all of its owner's other tokens here to delete expired ones, a query on every
        API request; an expired token is refused and deleted when it is next used anyway."""
        if auth_token.expiry is not None and auth_token.expiry < timezone.now():
            auth_token.delete()
            return True
        return False
