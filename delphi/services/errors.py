"""The one error type of the Delphi services: its message says what is wrong and where."""


class DelphiError(ValueError):
    pass
