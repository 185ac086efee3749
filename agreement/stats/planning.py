"""How many items a rating study needs, from the published formulas for the one-way ICC(1).

- Precision (Bonett 2002, Stat. Med. 21:1331-1335, eq. 3): items for a 100(1-a)% interval of
  full width w around a planned ICC rho with k ratings per item,
  n = 8 z^2 (1-rho)^2 (1+(k-1)rho)^2 / (k (k-1) w^2) + 1,  z = z_{1-a/2};
  Bonett adds 5 rho when k = 2 and rho >= 0.7, where the approximation runs short.
- Power (Walter, Eliasziw & Donner 1998, Stat. Med. 17:101-110): items to reject
  H0: rho = rho0 in favour of rho1 > rho0 with level a and power 1-b,
  n = 1 + 2 k (z_a + z_b)^2 / ((ln C0)^2 (k-1)),  C0 = (1 + k theta0) / (1 + k theta1),
  theta = rho / (1 - rho); z_a one-sided by default (their test of rho > rho0).
- The exact power of that F test (Donner & Eliasziw 1987): MSB/MSW ~ (1 + k theta) F(n-1,
  n(k-1)), so the smallest n reaching the power can be found without approximation.
- Two ICCs ("the jury's ICC above the clinicians' by at least d"): a stated approximation,
  the large-sample variance of each ICC(1) (Fisher; the variance behind Bonett's eq. 3),
  v(rho, k) = 2 (1-rho)^2 (1+(k-1)rho)^2 / (k (k-1) (n-1)), the two estimates treated as
  independent. Estimated on the same items they are positively correlated, so the answer
  errs on the side of too many items.

Bad input raises :class:`PlanningInputError`, a ValueError naming the field at fault.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from scipy import stats

BONETT = "Bonett (2002), Statistics in Medicine 21:1331-1335, eq. 3"
WALTER = "Walter, Eliasziw & Donner (1998), Statistics in Medicine 17:101-110"
EXACT_F = "Exact power of the one-way F test (Donner & Eliasziw 1987, Stat. Med. 6:441-448)"
DIFFERENCE = (
    "Large-sample (Fisher) variance of ICC(1), as in Bonett (2002); the two ICCs treated as "
    "independent (an approximation, conservative when they share items)"
)
#: The largest number of items any planner answers with; beyond it the request is refused.
MAX_ITEMS = 1_000_000


class PlanningInputError(ValueError):
    """A planning input out of range; ``field`` names it."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(f"{field}: {message}")
        self.message = message


@dataclass(frozen=True)
class SampleSize:
    """Items needed, with the unrounded value of the formula and where it comes from."""

    n_items: int
    exact: float
    method: str
    source: str
    formula: str
    inputs: dict[str, float] = field(default_factory=dict)
    notes: tuple[str, ...] = ()


def _check_rho(name: str, rho: float, *, low: float = 0.0) -> None:
    if not isinstance(rho, (int, float)) or math.isnan(rho) or not low <= rho < 1:
        raise PlanningInputError(name, f"must be in [{low:g}, 1), got {rho!r}")


def _check_k(name: str, k: int) -> None:
    if isinstance(k, bool) or not isinstance(k, int) or k < 2:
        raise PlanningInputError(name, f"must be a whole number of at least 2, got {k!r}")


def _check_prob(name: str, p: float) -> None:
    if not isinstance(p, (int, float)) or math.isnan(p) or not 0 < p < 1:
        raise PlanningInputError(name, f"must be strictly between 0 and 1, got {p!r}")


def _check_tails(tails: int) -> None:
    if tails not in (1, 2):
        raise PlanningInputError("tails", f"must be 1 or 2, got {tails!r}")


def _round_up(name: str, exact: float) -> int:
    if not math.isfinite(exact) or exact > MAX_ITEMS:
        raise PlanningInputError(
            name, f"needs more than {MAX_ITEMS:,} items ({exact:.4g}); relax the target"
        )
    return max(2, math.ceil(exact - 1e-9))


def fisher_variance_factor(rho: float, k: int) -> float:
    """(n-1) times the large-sample variance of ICC(1): 2(1-rho)^2(1+(k-1)rho)^2/(k(k-1))."""
    return 2 * (1 - rho) ** 2 * (1 + (k - 1) * rho) ** 2 / (k * (k - 1))


def bonett_items(
    rho: float, k: int, width: float, *, confidence: float = 0.95, small_k_correction: bool = True
) -> SampleSize:
    """Items for a confidence interval of full width ``width`` around ICC ``rho`` (Bonett eq. 3).

    ``small_k_correction`` adds Bonett's 5 rho for k = 2 and rho >= 0.7."""
    _check_rho("rho", rho)
    _check_k("k", k)
    _check_prob("confidence", confidence)
    if not isinstance(width, (int, float)) or not 0 < width < 1:
        raise PlanningInputError("width", f"must be strictly between 0 and 1, got {width!r}")
    z = float(stats.norm.ppf(1 - (1 - confidence) / 2))
    exact = 4 * z**2 * fisher_variance_factor(rho, k) / width**2 + 1
    notes = []
    if small_k_correction and k == 2 and rho >= 0.7:
        exact += 5 * rho
        notes.append("5 rho added for k = 2 and rho >= 0.7, as Bonett (2002) recommends")
    return SampleSize(
        n_items=_round_up("width", exact),
        exact=exact,
        method="precision",
        source=BONETT,
        formula="n = 8 z^2 (1-rho)^2 (1+(k-1) rho)^2 / (k (k-1) w^2) + 1",
        inputs={"rho": rho, "k": k, "width": width, "confidence": confidence},
        notes=tuple(notes),
    )


def bonett_width(rho: float, k: int, n_items: int, *, confidence: float = 0.95) -> float:
    """The interval width eq. 3 expects with ``n_items`` items (its inverse, no correction)."""
    _check_rho("rho", rho)
    _check_k("k", k)
    _check_prob("confidence", confidence)
    if n_items < 2:
        raise PlanningInputError("n_items", f"must be at least 2, got {n_items!r}")
    z = stats.norm.ppf(1 - (1 - confidence) / 2)
    return 2 * z * math.sqrt(fisher_variance_factor(rho, k) / (n_items - 1))


def f_interval_at_planned(
    rho: float, k: int, n_items: int, *, confidence: float = 0.95
) -> tuple[float, float]:
    """The one-way F interval of ICC(1) (Shrout & Fleiss case 1, as agreement.stats computes
    it) when the observed F equals its planned value 1 + k rho / (1 - rho): an independent
    check of eq. 3's width that involves no normal approximation."""
    f = 1 + k * rho / (1 - rho)
    a = 1 - confidence
    df1, df2 = n_items - 1, n_items * (k - 1)
    fl = f / stats.f.ppf(1 - a / 2, df1, df2)
    fu = f * stats.f.ppf(1 - a / 2, df2, df1)
    return (fl - 1) / (fl + k - 1), (fu - 1) / (fu + k - 1)


def _check_pair(rho0: float, rho1: float) -> None:
    _check_rho("rho0", rho0)
    _check_rho("rho1", rho1)
    if rho1 <= rho0:
        raise PlanningInputError("rho1", f"must be above rho0 ({rho0}), got {rho1}")


def walter_items(
    rho0: float, rho1: float, k: int, *, alpha: float = 0.05, power: float = 0.8, tails: int = 1
) -> SampleSize:
    """Items to test H0: rho = rho0 against rho1 (Walter, Eliasziw & Donner 1998)."""
    _check_pair(rho0, rho1)
    _check_k("k", k)
    _check_prob("alpha", alpha)
    _check_prob("power", power)
    _check_tails(tails)
    z_a = float(stats.norm.ppf(1 - alpha / tails))
    z_b = float(stats.norm.ppf(power))
    c0 = (1 + k * rho0 / (1 - rho0)) / (1 + k * rho1 / (1 - rho1))
    exact = 1 + 2 * k * (z_a + z_b) ** 2 / (math.log(c0) ** 2 * (k - 1))
    return SampleSize(
        n_items=_round_up("rho1", exact),
        exact=exact,
        method="power",
        source=WALTER,
        formula="n = 1 + 2 k (z_a + z_b)^2 / ((ln C0)^2 (k-1)), C0 = (1+k th0)/(1+k th1)",
        inputs={"rho0": rho0, "rho1": rho1, "k": k, "alpha": alpha, "power": power},
        notes=(f"{'one' if tails == 1 else 'two'}-sided test at level {alpha:g}",),
    )


def exact_power(
    rho0: float, rho1: float, k: int, n_items: int, *, alpha: float = 0.05, tails: int = 1
) -> float:
    """Power of the one-way F test of H0: rho = rho0 when the ICC is rho1, with n items."""
    _check_pair(rho0, rho1)
    _check_k("k", k)
    _check_prob("alpha", alpha)
    _check_tails(tails)
    df1, df2 = n_items - 1, n_items * (k - 1)
    ratio = (1 + k * rho0 / (1 - rho0)) / (1 + k * rho1 / (1 - rho1))
    upper = stats.f.ppf(1 - alpha / tails, df1, df2)
    p = float(stats.f.sf(ratio * upper, df1, df2))
    if tails == 2:
        p += float(stats.f.cdf(ratio * stats.f.ppf(alpha / 2, df1, df2), df1, df2))
    return p


def exact_items(
    rho0: float, rho1: float, k: int, *, alpha: float = 0.05, power: float = 0.8, tails: int = 1
) -> SampleSize:
    """The smallest number of items whose exact F-test power reaches ``power``."""
    _check_prob("power", power)
    start = walter_items(rho0, rho1, k, alpha=alpha, power=power, tails=tails).n_items
    n = max(2, start)
    # walk down while the smaller n still has the power, up while n lacks it
    while n > 2 and exact_power(rho0, rho1, k, n - 1, alpha=alpha, tails=tails) >= power:
        n -= 1
    while exact_power(rho0, rho1, k, n, alpha=alpha, tails=tails) < power:
        n += 1
        if n > MAX_ITEMS:
            raise PlanningInputError("rho1", f"needs more than {MAX_ITEMS:,} items")
    return SampleSize(
        n_items=n,
        exact=float(n),
        method="power (exact)",
        source=EXACT_F,
        formula="smallest n with P(F(n-1, n(k-1)) > C0 F_crit) >= power",
        inputs={"rho0": rho0, "rho1": rho1, "k": k, "alpha": alpha, "power": power},
        notes=(f"{'one' if tails == 1 else 'two'}-sided test at level {alpha:g}",),
    )


def difference_items(
    rho_low: float,
    difference: float,
    *,
    k_low: int,
    k_high: int,
    alpha: float = 0.05,
    power: float = 0.8,
    tails: int = 1,
) -> SampleSize:
    """Items to show an ICC of ``rho_low + difference`` (k_high ratings per item) above one of
    ``rho_low`` (k_low ratings per item): n = 1 + (z_a + z_b)^2 (v_low + v_high) / d^2, with
    v the (n-1)-scaled Fisher variance of each ICC(1). See the module docstring."""
    _check_rho("rho_low", rho_low)
    if not isinstance(difference, (int, float)) or not 0 < difference < 1 - rho_low:
        raise PlanningInputError(
            "difference", f"must be above 0 and below 1 - rho_low = {1 - rho_low:g}"
        )
    _check_k("k_low", k_low)
    _check_k("k_high", k_high)
    _check_prob("alpha", alpha)
    _check_prob("power", power)
    _check_tails(tails)
    rho_high = rho_low + difference
    z_a = float(stats.norm.ppf(1 - alpha / tails))
    z_b = float(stats.norm.ppf(power))
    v = fisher_variance_factor(rho_low, k_low) + fisher_variance_factor(rho_high, k_high)
    exact = 1 + (z_a + z_b) ** 2 * v / difference**2
    return SampleSize(
        n_items=_round_up("difference", exact),
        exact=exact,
        method="difference of two ICCs (approximation)",
        source=DIFFERENCE,
        formula="n = 1 + (z_a + z_b)^2 (v(rho_low, k_low) + v(rho_high, k_high)) / d^2",
        inputs={
            "rho_low": rho_low,
            "difference": difference,
            "k_low": k_low,
            "k_high": k_high,
            "alpha": alpha,
            "power": power,
        },
        notes=(
            f"{'one' if tails == 1 else 'two'}-sided test at level {alpha:g}",
            "the two ICCs are treated as independent; on shared items this overstates n",
        ),
    )
