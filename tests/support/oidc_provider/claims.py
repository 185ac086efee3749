"""The claims the test provider sends about a user."""

from __future__ import annotations

from typing import Any

VERIFIED_GROUP = "email-verified"


def userinfo(claims: dict[str, Any], user: Any) -> dict[str, Any]:
    """Standard claims: the e-mail, verified only for members of VERIFIED_GROUP."""
    claims["email"] = user.email
    claims["email_verified"] = user.groups.filter(name=VERIFIED_GROUP).exists()
    claims["name"] = user.get_full_name() or user.username
    claims["preferred_username"] = user.username
    return claims
