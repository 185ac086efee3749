"""The accounts app's one domain error type."""

from __future__ import annotations

from medhelm_site.common.errors import DomainError


class AccountError(DomainError):
    """A refused account action (unlock, token), naming the field it is about."""
