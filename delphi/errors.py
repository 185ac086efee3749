"""The one error type of the Delphi app: its message says what is wrong and where."""

from medhelm_site.common.errors import DomainError


class DelphiError(DomainError):
    pass
