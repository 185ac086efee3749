"""The one error type of the annotation app: its message says what is wrong and where."""

from __future__ import annotations

from collections.abc import Mapping

from medhelm_site.common.errors import DomainError


class AnnotationError(DomainError):
    """A request about a rating study that cannot be carried out (see DomainError)."""


class AnswersError(AnnotationError):
    """Several criteria of one set of answers are wrong at once: a rater sees every problem
    beside its criterion instead of one per attempt."""

    def __init__(self, errors: Mapping[str, str]) -> None:
        self.errors = dict(errors)
        first = next(iter(self.errors))
        message = "; ".join(f"{key}: {reason}" for key, reason in self.errors.items())
        super().__init__(message, field=first)

    def as_dict(self) -> dict[str, list[str]]:
        return {key: [reason] for key, reason in self.errors.items()}


class LongFileRefused(AnnotationError):
    """A long file of ratings or scores that was not imported, with every bad line: each
    error names its line, column and reason (annotation.imports.longfile.LineError)."""

    def __init__(self, errors: list, *, noun: str = "ratings") -> None:
        self.errors = list(errors)
        n = len(self.errors)
        first = "; ".join(str(e) for e in self.errors[:3])
        more = f" (and {n - 3} more)" if n > 3 else ""
        super().__init__(
            f"nothing was imported: {n} problem{'s' if n != 1 else ''} in the {noun} file: "
            f"{first}{more}",
            field="file",
        )
