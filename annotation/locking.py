"""The rule "a locked study refuses writes", written once with its one message.

Every write path of annotation and the jury asks here, each app raising its own error type
(annotation: AnnotationError; jury: JuryError) and naming what was refused. A path that
records the refusal rather than raising it (an import job, a HELM verdict report) takes the
message from lock_refusal; the rating hot path, which reads the lock inside its SQL, words
its refusal with locked_message. This module imports no service, selector or import module,
so each of them can use it without an import cycle.
"""

from __future__ import annotations

from annotation.models import RatingStudy
from medhelm_site.common.errors import DomainError

STUDY_LOCKED = "the study is locked: its {what} cannot change until a coordinator unlocks it"


def locked_message(*, what: str) -> str:
    """The refusal of a write of `what` (e.g. "ratings") in a locked study."""
    return STUDY_LOCKED.format(what=what)


def lock_refusal(*, study: RatingStudy, what: str) -> str | None:
    """The refusal message when `study` is locked, else None (the write may go on)."""
    return locked_message(what=what) if study.is_locked else None


def refuse_if_locked(*, study: RatingStudy, error: type[DomainError], what: str) -> None:
    """Raise `error` (the calling app's own type) on the field "study" when `study` is
    locked. Check again inside the saving transaction, on the row read under its lock."""
    refusal = lock_refusal(study=study, what=what)
    if refusal is not None:
        raise error(refusal, field="study")
