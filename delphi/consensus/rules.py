"""Consensus rules: how one item's statistics become one outcome.

A rule reads `delphi.stats.ItemStatistics` (or anything with the same attributes, such as a
RoundItemStatistics row) and gives an `Outcome`: consensus in (rated 7-9), consensus out
(rated 1-3), no consensus, or too few ratings (fewer than the rule's `min_n`; unable-to-rate
answers are not ratings). The presets are COMET 70/15, percent agreement (75), median/IQR
(median >= 7 or <= 3 with IQR <= 1) and RAND/UCLA (median band without disagreement);
their thresholds must keep "in" and "out" mutually exclusive. Rules combine with "and"
(every child agrees) or "or" (some child, and no child the other way); a child with too few
ratings makes the combination too few. Pure Python; no Django import.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from dataclasses import fields as dataclass_fields
from enum import StrEnum
from typing import Any, ClassVar, Protocol

from delphi.consensus.compare import at_least, at_most, below, number_text
from delphi.errors import DelphiError


class Outcome(StrEnum):
    CONSENSUS_IN = "consensus_in"
    CONSENSUS_OUT = "consensus_out"
    NO_CONSENSUS = "no_consensus"
    TOO_FEW_RATINGS = "too_few_ratings"


RESOLVED_OUTCOMES: frozenset[Outcome] = frozenset({Outcome.CONSENSUS_IN, Outcome.CONSENSUS_OUT})
# The order tables and charts list outcomes in, and the one palette that colours them.
OUTCOME_ORDER: tuple[Outcome, ...] = (
    Outcome.CONSENSUS_IN,
    Outcome.NO_CONSENSUS,
    Outcome.CONSENSUS_OUT,
    Outcome.TOO_FEW_RATINGS,
)
OUTCOME_COLOURS: dict[str, str] = {
    Outcome.CONSENSUS_IN: "#2e7d32",
    Outcome.NO_CONSENSUS: "#9e9e9e",
    Outcome.CONSENSUS_OUT: "#c62828",
    Outcome.TOO_FEW_RATINGS: "#ffb74d",
}


class ItemSummary(Protocol):
    """What a rule reads: satisfied by `delphi.stats.ItemStatistics` and RoundItemStatistics."""

    n_rated: int
    median: float | None
    iqr: float | None
    pct_low: float | None
    pct_high: float | None
    disagreement: bool | None


class RuleError(DelphiError):
    """A bad consensus rule; `where` is the path of the bad part, e.g. "rule.rules[1].min_n"."""

    def __init__(self, where: str, problem: str) -> None:
        super().__init__(f"consensus rule at {where}: {problem}", field="consensus_rule")
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
                f"must not exceed agree_pct_at_least ({number_text(agree)}), or an item could be "
                f"both in and out; got {oppose!r}",
            )

    def evaluate(self, stats: ItemSummary) -> Outcome:
        if _too_few(stats, self.min_n):
            return Outcome.TOO_FEW_RATINGS
        high, low = _require(stats.pct_high), _require(stats.pct_low)
        if at_least(high, self.agree_pct_at_least) and below(low, self.oppose_pct_below):
            return Outcome.CONSENSUS_IN
        if at_least(low, self.agree_pct_at_least) and below(high, self.oppose_pct_below):
            return Outcome.CONSENSUS_OUT
        return Outcome.NO_CONSENSUS

    def describe(self) -> str:
        a, b = number_text(self.agree_pct_at_least), number_text(self.oppose_pct_below)
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
        if at_least(_require(stats.pct_high), self.pct_at_least):
            return Outcome.CONSENSUS_IN
        if at_least(_require(stats.pct_low), self.pct_at_least):
            return Outcome.CONSENSUS_OUT
        return Outcome.NO_CONSENSUS

    def describe(self) -> str:
        p = number_text(self.pct_at_least)
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
                f"must be below median_at_least ({number_text(median_in)}), or an item could be "
                f"both in and out; got {median_out!r}",
            )

    def evaluate(self, stats: ItemSummary) -> Outcome:
        if _too_few(stats, self.min_n):
            return Outcome.TOO_FEW_RATINGS
        median, iqr = _require(stats.median), _require(stats.iqr)
        if not at_most(iqr, self.iqr_at_most):
            return Outcome.NO_CONSENSUS
        if at_least(median, self.median_at_least):
            return Outcome.CONSENSUS_IN
        if at_most(median, self.out_median_at_most):
            return Outcome.CONSENSUS_OUT
        return Outcome.NO_CONSENSUS

    def describe(self) -> str:
        iqr = number_text(self.iqr_at_most)
        return (
            f"Median and IQR: consensus in when median >= {number_text(self.median_at_least)} and "
            f"IQR <= {iqr}; consensus out when median <= {number_text(self.out_median_at_most)} and "
            f"IQR <= {iqr}{_min_n_text(self.min_n)}"
        )


@dataclass(frozen=True)
class RandUcla:
    """RAND/UCLA: appropriate (in) = median 7-9 without disagreement; inappropriate (out) =
    median 1-3 without disagreement; uncertain (no consensus) otherwise, including a median
    between bands (3.5 or 6.5, possible with an even panel). Disagreement is the IPR > IPRAS
    flag of `delphi.stats`, which depends on the quantile method."""

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
PRESET_THRESHOLDS: dict[str, tuple[str, ...]] = {
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


def _check_min_n(value: Any) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RuleError("rule.min_n", f"must be an integer >= 1, got {value!r}")


def _check_number(key: str, value: Any, low: float, high: float, low_open: bool = False) -> float:
    """`value` if it is a number in [low, high] (or (low, high] when low_open)."""
    low_text = f"> {number_text(low)}" if low_open else f">= {number_text(low)}"
    problem = f"must be a number {low_text} and <= {number_text(high)}, got {value!r}"
    if isinstance(value, bool) or not isinstance(value, int | float) or math.isnan(value):
        raise RuleError(f"rule.{key}", problem)
    if value > high or value < low or (low_open and value == low):
        raise RuleError(f"rule.{key}", problem)
    return value


def _too_few(stats: ItemSummary, min_n: int) -> bool:
    # With no rating at all nothing can be judged, whatever min_n says.
    return stats.n_rated < max(min_n, 1)


def _require(value: float | None) -> float:
    if value is None:
        raise ValueError("item statistics are missing a value needed by the consensus rule")
    return float(value)


def _min_n_text(min_n: int) -> str:
    return f"; at least {min_n} ratings" if min_n > 1 else ""
