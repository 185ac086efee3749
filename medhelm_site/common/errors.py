"""The base of every app's domain error: what a user asked for cannot be done.

Each app has one subclass (annotation.errors.AnnotationError, delphi.errors.DelphiError,
jury.errors.JuryError, agreement.errors.AgreementError). Views and the API turn exactly
these into a 400 that names the field; anything else is a bug and becomes a logged 500.
`ValueError` is not a user-error channel: a library's ValueError must not reach a user as
if it were their mistake.
"""

from __future__ import annotations


class DomainError(Exception):
    """A request that cannot be carried out, with a message that says what is wrong and
    where, and optionally the form or API field it is about."""

    def __init__(self, message: str, *, field: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.field = field

    def as_dict(self) -> dict[str, list[str]]:
        """The error as DRF and Django forms report errors: {field or "detail": [message]}."""
        return {self.field or "detail": [self.message]}
