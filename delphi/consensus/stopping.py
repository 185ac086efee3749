"""The stopping rule of a study (DelphiStudy.stopping_rule): when to end the rounds.

    {"max_rounds": int >= 1,                       stop once this many rounds are analysed
     "all_resolved": true | false,                 stop when no item of the latest round is
                                                   left without consensus
     "stability": {"pct_unchanged_at_least": x}}   stop when every unresolved item has >= x%
                                                   of its paired panelists unchanged
At least one criterion must be set; they are alternatives ("three rounds or consensus on
every item, whichever comes first").
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from delphi.consensus.compare import at_least, number_text
from delphi.consensus.rules import RESOLVED_OUTCOMES, Outcome
from delphi.errors import DelphiError


@dataclass(frozen=True)
class RoundOutcomes:
    """One analysed round: each item's outcome and, for items rated in the round before too,
    the % of paired panelists whose rating did not change (None when nobody could be paired)."""

    number: int
    outcomes: Mapping[Hashable, Outcome | str]
    pct_unchanged: Mapping[Hashable, float | None] = field(default_factory=dict)


@dataclass(frozen=True)
class StoppingDecision:
    stop: bool
    criteria_met: tuple[str, ...]  # among "max_rounds", "all_resolved", "stability"
    reasons: tuple[str, ...]  # one sentence per criterion set, met or not


def validate_stopping_rule(rule: Any) -> dict[str, Any]:
    """The normalised stopping rule; DelphiError naming the bad key or value otherwise."""
    if not isinstance(rule, Mapping):
        raise _invalid(f"stopping rule must be a JSON object, got {type(rule).__name__}")
    allowed = {"max_rounds", "all_resolved", "stability"}
    for key in rule:
        if key not in allowed:
            raise _invalid(
                f"stopping rule at {key}: unknown key {key!r}; allowed: {sorted(allowed)}"
            )
    normalised: dict[str, Any] = {}
    if "max_rounds" in rule:
        value = rule["max_rounds"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise _invalid(f"stopping rule at max_rounds: must be an integer >= 1, got {value!r}")
        normalised["max_rounds"] = value
    if "all_resolved" in rule:
        value = rule["all_resolved"]
        if not isinstance(value, bool):
            raise _invalid(f"stopping rule at all_resolved: must be true or false, got {value!r}")
        if value:
            normalised["all_resolved"] = True
    if "stability" in rule:
        stability = rule["stability"]
        if not isinstance(stability, Mapping) or set(stability) != {"pct_unchanged_at_least"}:
            raise _invalid(
                'stopping rule at stability: must be {"pct_unchanged_at_least": number}, '
                f"got {stability!r}"
            )
        value = stability["pct_unchanged_at_least"]
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or math.isnan(value)
            or not 0 < value <= 100
        ):
            raise _invalid(
                "stopping rule at stability.pct_unchanged_at_least: must be a number > 0 and "
                f"<= 100, got {value!r}"
            )
        normalised["stability"] = {"pct_unchanged_at_least": value}
    if not normalised:
        raise _invalid(
            "stopping rule sets no criterion: give max_rounds, all_resolved: true or stability"
        )
    return normalised


def evaluate_stopping_rule(rule: Any, rounds: Sequence[RoundOutcomes]) -> StoppingDecision:
    """Whether the study should stop after the latest analysed round, and why.

    `rounds` lists the analysed rounds in order. Only the latest round decides "all_resolved"
    and "stability": with carry-over "drop resolved" the items resolved earlier are not in
    it, and with "re-rate all" their latest outcome is the one that counts. An item counts as
    resolved when its outcome is consensus in or out; too few ratings is unresolved.
    """
    criteria = validate_stopping_rule(rule)
    if not rounds:
        return StoppingDecision(stop=False, criteria_met=(), reasons=("no round analysed yet",))
    numbers = [round_.number for round_ in rounds]
    if any(later <= earlier for earlier, later in itertools.pairwise(numbers)):
        raise ValueError(f"rounds must be in increasing order of number, got {numbers}")

    latest = rounds[-1]
    outcomes = {item: Outcome(outcome) for item, outcome in latest.outcomes.items()}
    unresolved = [item for item, outcome in outcomes.items() if outcome not in RESOLVED_OUTCOMES]
    met: list[str] = []
    reasons: list[str] = []

    if "max_rounds" in criteria:
        limit = criteria["max_rounds"]
        if latest.number >= limit:
            met.append("max_rounds")
            reasons.append(f"round {latest.number} reached the maximum of {limit} rounds")
        else:
            reasons.append(f"round {latest.number} of at most {limit}")

    if criteria.get("all_resolved"):
        if not unresolved:
            met.append("all_resolved")
            reasons.append(f"every item of round {latest.number} reached consensus (in or out)")
        else:
            reasons.append(
                f"{len(unresolved)} of {len(outcomes)} items of round {latest.number} "
                "without consensus"
            )

    if "stability" in criteria:
        threshold = criteria["stability"]["pct_unchanged_at_least"]
        stable, reason = _stability_met(latest, unresolved, threshold)
        if stable:
            met.append("stability")
        reasons.append(reason)

    return StoppingDecision(stop=bool(met), criteria_met=tuple(met), reasons=tuple(reasons))


def _stability_met(
    latest: RoundOutcomes, unresolved: Sequence[Hashable], threshold: float
) -> tuple[bool, str]:
    if latest.number == 1:
        return False, "stability needs two rounds to compare"
    if not unresolved:
        return True, f"no item of round {latest.number} is left unresolved, so none is unstable"
    unstable = []
    for item in unresolved:
        pct = latest.pct_unchanged.get(item)
        # An item without a between-round comparison (new, reworded, or nobody paired) has
        # not shown it is stable.
        if pct is None or not at_least(pct, threshold):
            unstable.append(item)
    if unstable:
        return False, (
            f"{len(unstable)} of {len(unresolved)} unresolved items have fewer than "
            f"{number_text(threshold)}% of panelists unchanged (or no comparison)"
        )
    return True, (
        f"all {len(unresolved)} unresolved items have >= {number_text(threshold)}% of panelists "
        "unchanged since the previous round"
    )


def _invalid(message: str) -> DelphiError:
    return DelphiError(message, field="stopping_rule")
