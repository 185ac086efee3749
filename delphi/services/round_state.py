"""What every round step checks first: the round locked, in the status the step needs, and
the study's locked protocol."""

from __future__ import annotations

from typing import Any

from delphi.errors import DelphiError
from delphi.models import DelphiStudy, PanelistRound, Round

# Panelists of a round who may still answer it.
ACTIVE_STATUSES = (PanelistRound.Status.INVITED, PanelistRound.Status.STARTED)


def locked_round(round_: Round) -> Round:
    """The round as it is now, locked for update until the transaction ends."""
    return Round.objects.select_for_update().select_related("study").get(pk=round_.pk)


def require_status(round_: Round, *allowed: str, doing: str) -> None:
    """DelphiError unless the round is in one of the `allowed` statuses."""
    if round_.status not in allowed:
        wanted = " or ".join(Round.Status(s).label.lower() for s in allowed)
        raise DelphiError(
            f"cannot {doing} round {round_.number}: it is "
            f"{round_.get_status_display().lower()}, not {wanted}"
        )


def locked_protocol(study: DelphiStudy) -> dict[str, Any]:
    """The protocol document frozen when the study was locked."""
    if study.protocol_document is None:
        raise DelphiError("the protocol is not locked")
    return study.protocol_document
