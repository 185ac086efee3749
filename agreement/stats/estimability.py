"""When an agreement estimate cannot be estimated: one rule, stated once, for every ICC a
report shows and for every clinician pair inside the clinician-clinician mean.

An ICC is *not estimable* when

1. it lies outside ``bounds`` = [-1, 1] (``out_of_bounds``). ICC(3,k) = (MS_items -
   MS_error) / MS_items is at most 1 but has no lower bound: for k = 2 it is
   2 r / (1 + r) of the single-rater ICC(C,1) = r, so it passes -1 once r < -1/3 and runs
   to minus infinity as r nears -1, which happens when items barely vary compared with the
   raters' disagreement (two or three shared items, near-constant ratings);
2. its interval is wider than ``max_ci_width``, or it has no interval at all
   (``interval_too_wide``): such an interval says the data cannot place the estimate,
   whatever band the point falls in;
3. it rests on fewer than ``min_shared_items`` items (``too_few_shared_items``): a machine
   cell's items scored by the machine and rated by a clinician; for the clinician-clinician
   mean, its pairs' shared items.

Where it applies, and why:

- every cell of a report (a machine against the clinicians, the clinician-clinician mean;
  all items, each category and benchmark, each criterion): tests 1-3 on the cell's estimate
  and its bootstrap interval (:meth:`EstimabilityRule.check_cell`);
- every clinician pair inside the clinician-clinician mean: test 3 only
  (:meth:`EstimabilityRule.check_pair`). A pair sharing too few items is left out of the
  mean, in the data and in every resample, and counted: the design decides, before any
  value is seen. A pair is never left out for its value. That would trim one side only
  (ICC(3,2) <= 1 always): for two independent raters on 2 shared items the pair ICC is
  1 - F(1, 1), and the mean of the values inside [-1, 1] is 1 - (sqrt 2 - atan sqrt 2) /
  atan sqrt 2 = 0.52 where the truth is 0 (0.35 on 3 items, 0.20 on 5; a test checks this by
  simulation). A pair far below -1 stays in the mean, and the mean is held to tests 1 and 2
  as a cell. Nor does the width test apply to a pair: MedHELM gives a pair no interval; the
  interval it reports is the bootstrap of the mean, tested at the cell;
- a difference (machine minus clinician-clinician) is not estimable when either of its
  terms is; the bounds and the width are stated for an ICC, not for a difference of two.

What is not estimable stays out of every mean and difference, and reports state how many
pairs were left out.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

BOUNDS: tuple[float, float] = (-1.0, 1.0)
OUT_OF_BOUNDS = "out_of_bounds"
TOO_WIDE = "interval_too_wide"
TOO_FEW_SHARED = "too_few_shared_items"
REASON_CODES: tuple[str, ...] = (OUT_OF_BOUNDS, TOO_WIDE, TOO_FEW_SHARED)
#: The widest interval :class:`EstimabilityRule` accepts as a parameter: the width of [-1, 1].
WIDEST = BOUNDS[1] - BOUNDS[0]
#: Rounding slack on the bounds: an ICC(3,2) equal to 1 can come out as 1 + 2e-16.
_SLACK = 1e-12


class NotEstimableError(ValueError):
    """The data give a number, but the rule says it cannot be estimated (``codes`` say why).

    A ValueError like every data problem of the statistics core, so code that treats "the
    data allow no estimate" alike still does; callers that report the rule catch it first.
    ``count``: how many candidates (e.g. clinician pairs) the rule left out.
    """

    def __init__(self, message: str, *, codes: tuple[str, ...], count: int = 0) -> None:
        super().__init__(message)
        self.codes = codes
        self.count = count


@dataclass(frozen=True)
class Verdict:
    """What the rule says of one estimate: no codes means estimable."""

    codes: tuple[str, ...] = ()
    reasons: tuple[str, ...] = ()

    @property
    def estimable(self) -> bool:
        return not self.codes

    @property
    def reason(self) -> str:
        """The reasons as one sentence fragment ("" when estimable)."""
        return "; ".join(self.reasons)


def number(x: float) -> str:
    """A value in a reason: three decimals, or a whole number with thousands separators when
    large (an interval of a degenerate mean reaches -24,568)."""
    if not math.isfinite(x):
        return str(x)
    return f"{x:.3f}" if abs(x) < 1000 else f"{x:,.0f}"


@dataclass(frozen=True)
class EstimabilityRule:
    """The rule's parameters (stored with a report) and its tests; see the module docstring."""

    max_ci_width: float
    min_shared_items: int
    bounds: tuple[float, float] = BOUNDS

    def __post_init__(self) -> None:
        width = float(self.max_ci_width)
        if not 0 < width <= WIDEST:
            raise ValueError(f"max_ci_width must be above 0 and at most {WIDEST:g}, got {width}")
        if isinstance(self.min_shared_items, bool) or int(self.min_shared_items) < 2:
            raise ValueError("min_shared_items must be a whole number >= 2 (an ICC needs two)")
        lo, hi = self.bounds
        if not -math.inf < lo < hi < math.inf:
            raise ValueError(f"bounds must be two finite numbers, low < high, got {self.bounds}")

    def in_bounds(self, values: npt.ArrayLike) -> np.ndarray:
        """Elementwise: finite and inside the bounds (up to rounding)."""
        v = np.asarray(values, dtype=np.float64)
        lo, hi = self.bounds
        with np.errstate(invalid="ignore"):
            return np.isfinite(v) & (v >= lo - _SLACK) & (v <= hi + _SLACK)

    def bounds_text(self) -> str:
        lo, hi = self.bounds
        return f"[{lo:g}, {hi:g}]"

    def check_pair(self, *, n_shared: int) -> str | None:
        """Why a clinician pair stays out of the mean (a reason code), or None. By its shared
        items only, never by its value (see the module docstring)."""
        return TOO_FEW_SHARED if n_shared < self.min_shared_items else None

    def check_cell(
        self,
        *,
        estimate: float,
        ci_low: float | None,
        ci_high: float | None,
        n_shared: int | None,
        confidence: float = 0.95,
    ) -> Verdict:
        """Every test the estimate fails, with a reason naming the values. ``n_shared`` None:
        the cell's shared items are tested per pair (the clinician-clinician mean)."""
        codes: list[str] = []
        reasons: list[str] = []
        if not bool(self.in_bounds(estimate)):
            codes.append(OUT_OF_BOUNDS)
            reasons.append(f"ICC {number(estimate)} is outside {self.bounds_text()}")
        level = f"{100 * confidence:g}%"
        if ci_low is None or ci_high is None or not math.isfinite(ci_high - ci_low):
            codes.append(TOO_WIDE)
            reasons.append(
                f"no {level} interval, so its width cannot be checked against {self.max_ci_width:g}"
            )
        elif ci_high - ci_low > self.max_ci_width:
            codes.append(TOO_WIDE)
            reasons.append(
                f"{level} interval ({number(ci_low)}, {number(ci_high)}) is "
                f"{number(ci_high - ci_low)} wide, more than {self.max_ci_width:g}"
            )
        if n_shared is not None and n_shared < self.min_shared_items:
            codes.append(TOO_FEW_SHARED)
            reasons.append(f"rests on {n_shared} shared items, fewer than {self.min_shared_items}")
        return Verdict(tuple(codes), tuple(reasons))

    def pairs_left_out(self, n_left_out: int, n_pairs: int) -> str:
        """Words for the pairs left out of a mean of ``n_pairs``, or "" when none was."""
        if not n_left_out:
            return ""
        return (
            f"{n_left_out} of {n_pairs} clinician pairs left out (sharing fewer than "
            f"{self.min_shared_items} items)"
        )

    def describe(self, *, confidence: float = 0.95) -> str:
        """The rule as the method section states it, with its parameter values."""
        level = f"{100 * confidence:g}%"
        b = self.bounds_text()
        m = self.min_shared_items
        return (
            f'An ICC is not estimable, and is shown as "not estimable" with the reason instead '
            f"of a number, interval, band or difference, when it lies outside {b}, when its "
            f"{level} interval is wider than {self.max_ci_width:g} (or there is none), or when "
            f"it rests on fewer than {m} shared items (a machine cell: the items the machine "
            f"scored and a clinician rated; the clinician-clinician cell: when no pair shares "
            f"{m}). Inside the clinician-clinician mean a pair sharing fewer than {m} items is "
            f"left out, in every bootstrap resample too, and counted. A pair is never left out "
            f"for its value: ICC(3,2) has no lower bound, so leaving out the pairs below -1 "
            f"would keep only the agreeing side (for independent raters on 2 shared items the "
            f"mean of the pair ICCs inside {b} is 0.52, not 0); the mean of all pairs is held "
            f"to the bounds and the width instead. A difference is not estimable when either "
            f"term is. What is not estimable stays out of every mean and difference."
        )

    def as_record(self, *, confidence: float = 0.95) -> dict[str, object]:
        """The rule as stored with a report's method: parameters and the stated text."""
        return {
            "applied": True,
            "bounds": list(self.bounds),
            "max_ci_width": float(self.max_ci_width),
            "min_shared_items": int(self.min_shared_items),
            "reason_codes": list(REASON_CODES),
            "text": self.describe(confidence=confidence),
        }
