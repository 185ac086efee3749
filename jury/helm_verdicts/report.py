"""What an import of HELM verdicts found and did, and one verdict read from the run."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from annotation.imports import RowError
from annotation.models import RubricCriterion

JUDGE_PREFIX = "helm:"
ScoreKey = tuple[int, str, int]  # (item id, judge name, criterion id)
ScoreState = tuple[float | None, bool, str]  # (value, is valid, explanation)


@dataclass
class HelmVerdictReport:
    """What an import of HELM verdicts found and did. `saved` is True when it committed (even
    if nothing was new); `ok` is False when errors or conflicts stopped it."""

    request_states: int = 0
    judges: list[str] = field(default_factory=list)
    judges_created: list[str] = field(default_factory=list)
    scores_created: int = 0
    unchanged: int = 0
    invalid: list[RowError] = field(default_factory=list)
    missing: dict[str, int] = field(default_factory=dict)
    missing_criteria: dict[str, int] = field(default_factory=dict)
    unknown_criteria: dict[str, int] = field(default_factory=dict)
    unmatched: list[RowError] = field(default_factory=list)
    not_judged: int = 0
    conflicts: list[RowError] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)
    flagged: list[RowError] = field(default_factory=list)  # new verdicts, jury.verdict_flags
    saved: bool = False

    @property
    def ok(self) -> bool:
        return not self.errors and not self.conflicts

    def as_dict(self) -> dict[str, Any]:
        """A JSON-ready summary (task results, audit rows, the command's output)."""
        return {
            "ok": self.ok,
            "saved": self.saved,
            "request_states": self.request_states,
            "judges": list(self.judges),
            "judges_created": list(self.judges_created),
            "scores_created": self.scores_created,
            "unchanged": self.unchanged,
            "invalid": len(self.invalid),
            "missing": dict(self.missing),
            "missing_criteria": dict(self.missing_criteria),
            "unknown_criteria": dict(self.unknown_criteria),
            "unmatched": len(self.unmatched),
            "not_judged": self.not_judged,
            "conflicts": [c.as_dict() for c in self.conflicts],
            "errors": [e.as_dict() for e in self.errors],
            "flagged": [f.as_dict() for f in self.flagged],
        }


@dataclass(frozen=True)
class Score:
    """One verdict read from the run, ready to be stored."""

    where: str
    order: int
    item_id: int
    item_label: str
    judge_key: str
    criterion: RubricCriterion
    value: float | None
    is_valid: bool
    explanation: str

    @property
    def judge_name(self) -> str:
        return JUDGE_PREFIX + self.judge_key

    @property
    def key(self) -> ScoreKey:
        return (self.item_id, self.judge_name, self.criterion.pk)

    @property
    def state(self) -> ScoreState:
        return (self.value, self.is_valid, self.explanation)


def shown(state: ScoreState) -> str:
    """A stored score as a conflict message shows it: "4 (valid)"."""
    value, is_valid, _explanation = state
    number = "null" if value is None else f"{value:g}"
    return f"{number} ({'valid' if is_valid else 'invalid'})"
