"""The one error type of the agreement app: its message says what is wrong and where."""

from medhelm_site.common.errors import DomainError


class AgreementError(DomainError):
    pass
