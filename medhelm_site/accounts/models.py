"""API tokens: django-rest-knox's hashed, expiring token, with a name and the password it
was issued under (a token issued before a password change stops working); and the single
sign-on identity an account is bound to."""

from __future__ import annotations

from django.conf import settings
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


class SsoIdentity(models.Model):
    """The provider's user (issuer + subject, the ID token's `iss` and `sub`) an account is
    bound to, at its first single sign-on matched by verified e-mail. From then on the
    subject finds the account, and the e-mail alone no longer does: a provider may give a
    departed user's address to someone else."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="sso_identity"
    )
    issuer = models.CharField(max_length=255)
    subject = models.CharField(max_length=255)
    bound_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["issuer", "subject"], name="sso_subject_once")
        ]

    def __str__(self) -> str:
        return f"{self.subject} at {self.issuer} is {self.user}"
