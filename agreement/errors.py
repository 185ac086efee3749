"""The one error type of the agreement app: its message says what is wrong and where."""

from __future__ import annotations

from collections.abc import Mapping

from medhelm_site.common.errors import DomainError


class AgreementError(DomainError):
    pass


class ParameterErrors(AgreementError):
    """Every report parameter at fault, each under its field, so a form or an API client
    sees all of them at once (`field` and `message` name the first)."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        field, message = next(iter(self.errors.items()))
        super().__init__(message, field=field)

    def __str__(self) -> str:
        return "; ".join(f"{field}: {message}" for field, message in self.errors.items())

    def as_dict(self) -> dict[str, list[str]]:
        return {field: [message] for field, message in self.errors.items()}
