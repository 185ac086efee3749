"""Consensus rules for Delphi items, and the stopping rule of a study.

Pure Python; no Django import. A rule reads the per-item statistics of `delphi.stats`
(`ItemStatistics`, or any object with the same attribute names, such as a
`RoundItemStatistics` row) and gives one `Outcome`:

- "consensus_in":     the panel agrees the item belongs (rated 7-9);
- "consensus_out":    the panel agrees it does not (rated 1-3);
- "no_consensus":     neither;
- "too_few_ratings":  fewer ratings than the rule's `min_n` (unable-to-rate answers are not
                      ratings), or no rating at all.

Consensus rule JSON (stored in DelphiStudy.consensus_rule, hashed when the protocol locks)
-----------------------------------------------------------------------------------------
    Rule      = Preset | Composite
    Composite = {"op": "and" | "or", "rules": [Rule, ...], "min_n": int >= 1}
    Preset    = {"preset": <name>, "min_n": int >= 1, <thresholds of that preset>}

    preset name          thresholds (default)               consensus in / consensus out
    "comet_70_15"        agree_pct_at_least (70)            in:  % rating 7-9 >= 70 and
                         oppose_pct_below (15)                   % rating 1-3 < 15
                                                            out: % rating 1-3 >= 70 and
                                                                 % rating 7-9 < 15
    "percent_agreement"  pct_at_least (75)                  in:  % rating 7-9 >= 75
                                                            out: % rating 1-3 >= 75
    "median_iqr"         median_at_least (7)                in:  median >= 7 and IQR <= 1
                         iqr_at_most (1)                    out: median <= 3 and IQR <= 1
                         out_median_at_most (3)
    "rand_ucla"          (none)                             in:  median 7-9, no disagreement
                                                            out: median 1-3, no disagreement
                                                            otherwise no consensus

- "min_n" is optional everywhere (default 1); "rules" needs at least one rule; composites
  nest to any depth. Thresholds left out take the defaults above. Percentages are 0-100.
- `rule_to_dict` writes every threshold and min_n out, so the stored (hashed) rule does not
  depend on this module's defaults. `rule_from_dict(rule_to_dict(r)) == r`.
- Unknown keys, unknown presets, values of the wrong type or out of range raise ValueError
  naming the place, e.g. "consensus rule at rule.rules[1].iqr_at_most: must be a number >= 0,
  got -1".
- Thresholds must keep "in" and "out" mutually exclusive: COMET needs oppose_pct_below <=
  agree_pct_at_least, percent agreement needs pct_at_least > 50, median/IQR needs
  out_median_at_most < median_at_least.
- RAND/UCLA: a median between bands (3.5 or 6.5, possible with an even panel) is neither
  1-3 nor 7-9 and so "uncertain" (no consensus). Disagreement is the IPR > IPRAS flag of
  `delphi.stats`, which depends on the quantile method the statistics were computed with.
- Comparisons of percentages and IQRs allow 1e-9 of floating-point slack (an IQR of
  1.0000000000000002 is "<= 1").

Combining outcomes (`combine_outcomes`)
- min_n is checked first at every level: fewer ratings than a node's min_n makes that node
  "too_few_ratings"; a composite with any "too_few_ratings" child is "too_few_ratings" (the
  rule as written cannot be evaluated on so few ratings, whichever way the other parts point).
- AND: "consensus_in" only if every child is in; "consensus_out" only if every child is out;
  otherwise "no_consensus".
- OR: "consensus_in" if some child is in and none is out; "consensus_out" if some child is
  out and none is in; a conflict (one child in, another out) is "no_consensus": the verdict
  would then depend on which definition one picked, which is not consensus.

Stopping rule JSON (DelphiStudy.stopping_rule)
----------------------------------------------
    {"max_rounds": int >= 1,                        stop once this many rounds are analysed
     "all_resolved": true | false,                  stop when no item of the latest round is
                                                    left without consensus
     "stability": {"pct_unchanged_at_least": x}}    stop when every unresolved item of the
                                                    latest round has >= x% of its paired
                                                    panelists unchanged since the round before
At least one criterion must be set; the criteria are alternatives (stop when any is met),
as in the usual "three rounds or consensus on every item, whichever comes first".
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from dataclasses import fields as dataclass_fields
from enum import StrEnum
from typing import Any, ClassVar, NoReturn, Protocol

# Absolute slack for threshold comparisons on percentages, medians and IQRs computed in floats.
FLOAT_TOLERANCE = 1e-9


class Outcome(StrEnum):
    CONSENSUS_IN = "consensus_in"
    CONSENSUS_OUT = "consensus_out"
    NO_CONSENSUS = "no_consensus"
    TOO_FEW_RATINGS = "too_few_ratings"


RESOLVED_OUTCOMES: frozenset[Outcome] = frozenset({Outcome.CONSENSUS_IN, Outcome.CONSENSUS_OUT})


class ItemSummary(Protocol):
    """What a rule reads: satisfied by `delphi.stats.ItemStatistics` and RoundItemStatistics."""

    n_rated: int
    median: float | None
    iqr: float | None
    pct_low: float | None
    pct_high: float | None
    disagreement: bool | None


# --------------------------------------------------------------------------- rules


class RuleError(ValueError):
    """A bad consensus rule; `where` is the path of the bad part, e.g. "rule.rules[1].min_n"."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"consensus rule at {where}: {problem}")
        self.where = where
        self.problem = problem


@dataclass(frozen=True)
class Comet7015:
    """COMET: in when >= 70% rate 7-9 and < 15% rate 1-3; out mirrored."""

    agree_pct_at_least: float = 70
    oppose_pct_below: float = 15
    min_n: int = 1
    preset: ClassVar[str] = "comet_70_15"

    def __post_init__(self) -> None:
        _check_min_n(self.min_n)
        agree = _check_number("agree_pct_at_least", self.agree_pct_at_least, 0, 100, True)
        oppose = _check_number("oppose_pct_below", self.oppose_pct_below, 0, 100, True)
        if oppose > agree:
            raise RuleError(
                "rule.oppose_pct_below",
                f"must not exceed agree_pct_at_least ({_num(agree)}), or an item could be "
                f"both in and out; got {oppose!r}",
            )

    def evaluate(self, stats: ItemSummary) -> Outcome:
        if _too_few(stats, self.min_n):
            return Outcome.TOO_FEW_RATINGS
        high, low = _require(stats.pct_high), _require(stats.pct_low)
        if _at_least(high, self.agree_pct_at_least) and _below(low, self.oppose_pct_below):
            return Outcome.CONSENSUS_IN
        if _at_least(low, self.agree_pct_at_least) and _below(high, self.oppose_pct_below):
            return Outcome.CONSENSUS_OUT
        return Outcome.NO_CONSENSUS

    def describe(self) -> str:
        a, b = _num(self.agree_pct_at_least), _num(self.oppose_pct_below)
        return (
            f"COMET: consensus in when >= {a}% rate 7-9 and < {b}% rate 1-3; consensus out "
            f"when >= {a}% rate 1-3 and < {b}% rate 7-9{_min_n_text(self.min_n)}"
        )


@dataclass(frozen=True)
class PercentAgreement:
    """In when >= 75% rate 7-9; out when >= 75% rate 1-3."""

    pct_at_least: float = 75
    min_n: int = 1
    preset: ClassVar[str] = "percent_agreement"

    def __post_init__(self) -> None:
        _check_min_n(self.min_n)
        # Above 50 so that "in" (>= p% high) and "out" (>= p% low) cannot both hold.
        _check_number("pct_at_least", self.pct_at_least, 50, 100, True)

    def evaluate(self, stats: ItemSummary) -> Outcome:
        if _too_few(stats, self.min_n):
            return Outcome.TOO_FEW_RATINGS
        if _at_least(_require(stats.pct_high), self.pct_at_least):
            return Outcome.CONSENSUS_IN
        if _at_least(_require(stats.pct_low), self.pct_at_least):
            return Outcome.CONSENSUS_OUT
        return Outcome.NO_CONSENSUS

    def describe(self) -> str:
        p = _num(self.pct_at_least)
        return (
            f"Percent agreement: consensus in when >= {p}% rate 7-9; consensus out when "
            f">= {p}% rate 1-3{_min_n_text(self.min_n)}"
        )


@dataclass(frozen=True)
class MedianIqr:
    """In when median >= 7 and IQR <= 1; out when median <= 3 and IQR <= 1."""

    median_at_least: float = 7
    iqr_at_most: float = 1
    out_median_at_most: float = 3
    min_n: int = 1
    preset: ClassVar[str] = "median_iqr"

    def __post_init__(self) -> None:
        _check_min_n(self.min_n)
        median_in = _check_number("median_at_least", self.median_at_least, 1, 9)
        _check_number("iqr_at_most", self.iqr_at_most, 0, 8)
        median_out = _check_number("out_median_at_most", self.out_median_at_most, 1, 9)
        if median_out >= median_in:
            raise RuleError(
                "rule.out_median_at_most",
                f"must be below median_at_least ({_num(median_in)}), or an item could be "
                f"both in and out; got {median_out!r}",
            )

    def evaluate(self, stats: ItemSummary) -> Outcome:
        if _too_few(stats, self.min_n):
            return Outcome.TOO_FEW_RATINGS
        median, iqr = _require(stats.median), _require(stats.iqr)
        if not _at_most(iqr, self.iqr_at_most):
            return Outcome.NO_CONSENSUS
        if _at_least(median, self.median_at_least):
            return Outcome.CONSENSUS_IN
        if _at_most(median, self.out_median_at_most):
            return Outcome.CONSENSUS_OUT
        return Outcome.NO_CONSENSUS

    def describe(self) -> str:
        iqr = _num(self.iqr_at_most)
        return (
            f"Median and IQR: consensus in when median >= {_num(self.median_at_least)} and "
            f"IQR <= {iqr}; consensus out when median <= {_num(self.out_median_at_most)} and "
            f"IQR <= {iqr}{_min_n_text(self.min_n)}"
        )


@dataclass(frozen=True)
class RandUcla:
    """RAND/UCLA: appropriate (in) = median 7-9 without disagreement; inappropriate (out) =
    median 1-3 without disagreement; uncertain (no consensus) otherwise."""

    min_n: int = 1
    preset: ClassVar[str] = "rand_ucla"

    def __post_init__(self) -> None:
        _check_min_n(self.min_n)

    def evaluate(self, stats: ItemSummary) -> Outcome:
        if _too_few(stats, self.min_n):
            return Outcome.TOO_FEW_RATINGS
        median = _require(stats.median)
        if stats.disagreement:
            return Outcome.NO_CONSENSUS
        if median >= 7:
            return Outcome.CONSENSUS_IN
        if median <= 3:
            return Outcome.CONSENSUS_OUT
        return Outcome.NO_CONSENSUS

    def describe(self) -> str:
        return (
            "RAND/UCLA: appropriate (consensus in) when the median is 7-9 without "
            "disagreement; inappropriate (consensus out) when the median is 1-3 without "
            "disagreement; uncertain otherwise; disagreement when IPR > IPRAS = 2.35 + 1.5 AI"
            f"{_min_n_text(self.min_n)}"
        )


@dataclass(frozen=True)
class CombinedRule:
    """Several rules joined by "and" or "or" (see the module docstring for how)."""

    op: str
    rules: tuple[ConsensusRule, ...]
    min_n: int = 1

    def __post_init__(self) -> None:
        _check_min_n(self.min_n)
        if self.op not in ("and", "or"):
            raise RuleError("rule.op", f'must be "and" or "or", got {self.op!r}')
        if not self.rules:
            raise RuleError("rule.rules", "must be a non-empty list of rules")

    def evaluate(self, stats: ItemSummary) -> Outcome:
        if _too_few(stats, self.min_n):
            return Outcome.TOO_FEW_RATINGS
        return combine_outcomes(self.op, [rule.evaluate(stats) for rule in self.rules])

    def describe(self) -> str:
        joiner = " AND " if self.op == "and" else " OR "
        inner = joiner.join(f"({rule.describe()})" for rule in self.rules)
        return f"{inner}{_min_n_text(self.min_n)}"


PresetRule = Comet7015 | PercentAgreement | MedianIqr | RandUcla
ConsensusRule = PresetRule | CombinedRule

PRESETS: dict[str, type[PresetRule]] = {
    cls.preset: cls for cls in (Comet7015, PercentAgreement, MedianIqr, RandUcla)
}

# Threshold keys of each preset, in field order (min_n is common to all).
_PRESET_THRESHOLDS: dict[str, tuple[str, ...]] = {
    name: tuple(f.name for f in dataclass_fields(cls) if f.name != "min_n")
    for name, cls in PRESETS.items()
}


def combine_outcomes(op: str, outcomes: Sequence[Outcome | str]) -> Outcome:
    """Join child outcomes with "and" or "or" (rules in the module docstring)."""
    if op not in ("and", "or"):
        raise ValueError(f'op must be "and" or "or", got {op!r}')
    if not outcomes:
        raise ValueError("combine_outcomes needs at least one outcome")
    children = [Outcome(outcome) for outcome in outcomes]
    if Outcome.TOO_FEW_RATINGS in children:
        return Outcome.TOO_FEW_RATINGS
    if op == "and":
        if all(child is Outcome.CONSENSUS_IN for child in children):
            return Outcome.CONSENSUS_IN
        if all(child is Outcome.CONSENSUS_OUT for child in children):
            return Outcome.CONSENSUS_OUT
        return Outcome.NO_CONSENSUS
    any_in = Outcome.CONSENSUS_IN in children
    any_out = Outcome.CONSENSUS_OUT in children
    if any_in and not any_out:
        return Outcome.CONSENSUS_IN
    if any_out and not any_in:
        return Outcome.CONSENSUS_OUT
    return Outcome.NO_CONSENSUS


def evaluate_consensus(rule: ConsensusRule, stats: ItemSummary) -> Outcome:
    """The outcome of one item under a rule."""
    return rule.evaluate(stats)


# --------------------------------------------------------------------------- JSON


def rule_to_dict(rule: ConsensusRule) -> dict[str, Any]:
    """The plain JSON dict of a rule, every threshold and min_n written out."""
    if isinstance(rule, CombinedRule):
        return {
            "op": rule.op,
            "min_n": rule.min_n,
            "rules": [rule_to_dict(child) for child in rule.rules],
        }
    data: dict[str, Any] = {"preset": rule.preset, "min_n": rule.min_n}
    for key in _PRESET_THRESHOLDS[rule.preset]:
        data[key] = getattr(rule, key)
    return data


def rule_from_dict(data: Any) -> ConsensusRule:
    """Parse and validate a rule dict; ValueError names the bad key or value and where it is."""
    return _parse_rule(data, "rule")


def validate_rule(data: Any) -> dict[str, Any]:
    """The normalised dict (defaults written out) of a valid rule; ValueError otherwise."""
    return rule_to_dict(rule_from_dict(data))


def _parse_rule(data: Any, path: str) -> ConsensusRule:
    if not isinstance(data, Mapping):
        _fail(path, f"must be a JSON object, got {type(data).__name__}")
    if ("op" in data) == ("preset" in data):
        _fail(path, 'needs exactly one of "op" (a combination) or "preset" (a single rule)')
    if "op" in data:
        _no_unknown_keys(data, {"op", "rules", "min_n"}, path)
        rules = data.get("rules")
        if not isinstance(rules, list) or not rules:
            _fail(f"{path}.rules", f"must be a non-empty list of rules, got {rules!r}")
        children = tuple(_parse_rule(child, f"{path}.rules[{i}]") for i, child in enumerate(rules))
        arguments: dict[str, Any] = {"op": data["op"], "rules": children}
        cls: type[ConsensusRule] = CombinedRule
    else:
        name = data["preset"]
        if not isinstance(name, str) or name not in PRESETS:
            _fail(f"{path}.preset", f"unknown preset {name!r}; known presets: {sorted(PRESETS)}")
        thresholds = _PRESET_THRESHOLDS[name]
        _no_unknown_keys(data, {"preset", "min_n", *thresholds}, path)
        arguments = {key: data[key] for key in thresholds if key in data}
        cls = PRESETS[name]
    if "min_n" in data:
        arguments["min_n"] = data["min_n"]
    try:
        return cls(**arguments)
    except RuleError as error:
        # The dataclass names the key inside its own rule; put it at its place in the tree.
        raise RuleError(path + error.where.removeprefix("rule"), error.problem) from None


def _check_min_n(value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RuleError("rule.min_n", f"must be an integer >= 1, got {value!r}")


def _check_number(key: str, value: Any, low: float, high: float, low_open: bool = False) -> float:
    """`value` if it is a number in [low, high] (or (low, high] when low_open)."""
    low_text = f"> {_num(low)}" if low_open else f">= {_num(low)}"
    problem = f"must be a number {low_text} and <= {_num(high)}, got {value!r}"
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise RuleError(f"rule.{key}", problem)
    if value > high or value < low or (low_open and value == low):
        raise RuleError(f"rule.{key}", problem)
    return value


def _no_unknown_keys(data: Mapping[str, Any], allowed: set[str], path: str) -> None:
    for key in data:
        if key not in allowed:
            _fail(f"{path}.{key}", f"unknown key {key!r}; allowed here: {sorted(allowed)}")


def _fail(path: str, problem: str) -> NoReturn:
    raise RuleError(path, problem)


# --------------------------------------------------------------------------- stopping


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
    """The normalised stopping rule; ValueError naming the bad key or value otherwise."""
    if not isinstance(rule, Mapping):
        raise ValueError(f"stopping rule must be a JSON object, got {type(rule).__name__}")
    allowed = {"max_rounds", "all_resolved", "stability"}
    for key in rule:
        if key not in allowed:
            raise ValueError(
                f"stopping rule at {key}: unknown key {key!r}; allowed: {sorted(allowed)}"
            )
    normalised: dict[str, Any] = {}
    if "max_rounds" in rule:
        value = rule["max_rounds"]
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"stopping rule at max_rounds: must be an integer >= 1, got {value!r}")
        normalised["max_rounds"] = value
    if "all_resolved" in rule:
        value = rule["all_resolved"]
        if not isinstance(value, bool):
            raise ValueError(f"stopping rule at all_resolved: must be true or false, got {value!r}")
        if value:
            normalised["all_resolved"] = True
    if "stability" in rule:
        stability = rule["stability"]
        if not isinstance(stability, Mapping) or set(stability) != {"pct_unchanged_at_least"}:
            raise ValueError(
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
            raise ValueError(
                "stopping rule at stability.pct_unchanged_at_least: must be a number > 0 and "
                f"<= 100, got {value!r}"
            )
        normalised["stability"] = {"pct_unchanged_at_least": value}
    if not normalised:
        raise ValueError(
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
        if pct is None or not _at_least(pct, threshold):
            unstable.append(item)
    if unstable:
        return False, (
            f"{len(unstable)} of {len(unresolved)} unresolved items have fewer than "
            f"{_num(threshold)}% of panelists unchanged (or no comparison)"
        )
    return True, (
        f"all {len(unresolved)} unresolved items have >= {_num(threshold)}% of panelists "
        "unchanged since the previous round"
    )


# --------------------------------------------------------------------------- helpers


def _too_few(stats: ItemSummary, min_n: int) -> bool:
    # With no rating at all nothing can be judged, whatever min_n says.
    return stats.n_rated < max(min_n, 1)


def _require(value: float | None) -> float:
    if value is None:
        raise ValueError("item statistics are missing a value needed by the consensus rule")
    return float(value)


def _at_least(value: float, threshold: float) -> bool:
    return value >= threshold - FLOAT_TOLERANCE


def _at_most(value: float, threshold: float) -> bool:
    return value <= threshold + FLOAT_TOLERANCE


def _below(value: float, threshold: float) -> bool:
    return value < threshold - FLOAT_TOLERANCE


def _num(value: float) -> str:
    return f"{value:g}"


def _min_n_text(min_n: int) -> str:
    return f"; at least {min_n} ratings" if min_n > 1 else ""


__all__ = [
    "PRESETS",
    "RESOLVED_OUTCOMES",
    "CombinedRule",
    "Comet7015",
    "ConsensusRule",
    "ItemSummary",
    "MedianIqr",
    "Outcome",
    "PercentAgreement",
    "RandUcla",
    "RoundOutcomes",
    "RuleError",
    "StoppingDecision",
    "combine_outcomes",
    "evaluate_consensus",
    "evaluate_stopping_rule",
    "rule_from_dict",
    "rule_to_dict",
    "validate_rule",
    "validate_stopping_rule",
]
