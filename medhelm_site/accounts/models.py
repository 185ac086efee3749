"""API tokens: django-rest-knox's hashed, expiring token, with a name and the password it
was issued under (a token issued before a password change stops working)."""

from __future__ import annotations

from django.db import models
from knox.models import AbstractAuthToken

# The public id of a token: the start of its digest (a SHA-512 of the secret, never the
# secret itself), enough to name it in a page or a URL.
PUBLIC_ID_LENGTH = 16


class ApiToken(AbstractAuthToken):
    name = models.CharField(max_length=64, blank=True)
    # The user's session auth hash (an HMAC of the password hash) when the token was made.
    password_fingerprint = models.CharField(max_length=128)

    class Meta:
        ordering = ["-created"]

    @property
    def public_id(self) -> str:
        return self.digest[:PUBLIC_ID_LENGTH]

    def __str__(self) -> str:
        return f"{self.name or 'token'} {self.public_id} of {self.user}"
