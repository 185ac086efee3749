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
    """A long file of ratings or scores that was not imported: `errors` holds the first bad
    lines (annotation.imports.longerrors keeps at most SHOWN_ERRORS of them in memory), each
    naming its line, column and reason (annotation.imports.longfile.LineError); `count` says
    how many there were in all."""

    def __init__(self, errors: list, *, noun: str = "ratings", count: int | None = None) -> None:
        self.errors = list(errors)
        self.count = len(self.errors) if count is None else count
        n = self.count
        first = "; ".join(str(e) for e in self.errors[:3])
        more = f" (and {n - 3} more)" if n > 3 else ""
        super().__init__(
            f"nothing was imported: {n} problem{'s' if n != 1 else ''} in the {noun} file: "
            f"{first}{more}",
            field="file",
        )
