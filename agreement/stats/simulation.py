"""Simulated rating studies for checking interval coverage (bench/bench_coverage.py and the
coverage tests): the normal two-way random-effects model

    x_ij = item_i + rater_j + e_ij,  item ~ N(0, item_sd^2), rater ~ N(0, rater_sd^2),
    e ~ N(0, error_sd^2),

with a fresh set of raters drawn for every study (raters are a sample from a population, as
clinicians are), complete (every item rated by every rater) or incomplete (each item rated
by ``per_item`` of ``n_raters`` raters, drawn at random per item). A machine rater scores
every item as item_i + e_i (its own error, SD error_sd). The true values of the statistics
the reports print are given in closed form by :func:`true_values`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

#: The machine rater's name in the simulated score tables.
MACHINE = "machine"


@dataclass(frozen=True)
class Design:
    """One simulated study design."""

    n_items: int
    n_raters: int  # raters in the study (the pool)
    per_item: int  # raters per item (= n_raters for a complete design)
    item_sd: float = 1.0
    rater_sd: float = 0.3
    error_sd: float = 1.0

    def __post_init__(self) -> None:
        if self.n_items < 2 or self.n_raters < 2 or not 2 <= self.per_item <= self.n_raters:
            raise ValueError(
                f"need >= 2 items and 2 <= per_item <= n_raters, got {self.n_items} items, "
                f"{self.per_item} of {self.n_raters} raters per item"
            )

    @property
    def complete(self) -> bool:
        return self.per_item == self.n_raters

    @property
    def label(self) -> str:
        if self.complete:
            return f"{self.n_items} items x {self.n_raters} raters"
        return f"{self.n_items} items, {self.per_item} of {self.n_raters} raters each"


def simulate_matrix(rng: np.random.Generator, design: Design) -> tuple[np.ndarray, np.ndarray]:
    """(ratings (n, R) with NaN where a rater did not rate the item, machine scores (n,))."""
    n, r, k = design.n_items, design.n_raters, design.per_item
    item = rng.normal(0.0, design.item_sd, n)
    rater = rng.normal(0.0, design.rater_sd, r)
    x = item[:, None] + rater[None, :] + rng.normal(0.0, design.error_sd, (n, r))
    if not design.complete:
        # each item keeps k raters drawn without replacement (argsort of uniforms per row)
        keep = np.argsort(rng.random((n, r)), axis=1)[:, :k]
        mask = np.zeros((n, r), dtype=bool)
        mask[np.arange(n)[:, None], keep] = True
        x = np.where(mask, x, np.nan)
    machine = item + rng.normal(0.0, design.error_sd, n)
    return x, machine


def score_table(ratings: np.ndarray, machine: np.ndarray | None = None) -> pd.DataFrame:
    """The long score table (item, criterion, rater, rater_kind, value) of a simulated study:
    one criterion, clinicians "c00".., and the machine as a judge."""
    n, r = ratings.shape
    items = np.array([f"i{i:05d}" for i in range(n)])
    raters = np.array([f"c{j:02d}" for j in range(r)])
    rated = ~np.isnan(ratings)
    ii, jj = np.nonzero(rated)
    parts = [
        pd.DataFrame(
            {
                "item": items[ii],
                "criterion": "overall",
                "rater": raters[jj],
                "rater_kind": "clinician",
                "value": ratings[ii, jj],
            }
        )
    ]
    if machine is not None:
        parts.append(
            pd.DataFrame(
                {
                    "item": items,
                    "criterion": "overall",
                    "rater": MACHINE,
                    "rater_kind": "judge",
                    "value": machine,
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def true_values(design: Design) -> dict[str, float]:
    """Population values of the statistics, for the design's number of raters per item k.

    - ICC forms (McGraw & Wong 1996): s_i / (s_i + s_r + s_e) etc. with s = variances.
    - On within-rater z-scores (the MedHELM statistics) the rater means are removed and every
      rater's SD is sqrt(s_i + s_e), so a clinician z is (item + e) / sqrt(s_i + s_e):
      two clinicians' ICC(C,2) = 2 s_i / (2 s_i + s_e) (the pair mean); the clinicians'
      interval alpha -> s_i / (s_i + s_e); the machine's ICC(C,2) with the mean of the item's
      k clinician z-scores (variance a = (s_i + s_e/k)/(s_i + s_e), machine variance 1,
      covariance c = s_i/(s_i + s_e)) is 4c / (a + 1 + 2c).
    """
    si, sr, se = design.item_sd**2, design.rater_sd**2, design.error_sd**2
    k = design.per_item
    total = si + se
    a, c = (si + se / k) / total, si / total
    machine = 4 * c / (a + 1 + 2 * c)
    pair = 2 * si / (2 * si + se)
    return {
        "ICC(A,1)": si / (si + sr + se),
        "ICC(C,1)": si / (si + se),
        "ICC(A,k)": si / (si + (sr + se) / k),
        "ICC(C,k)": si / (si + se / k),
        "clinician pair mean ICC(3,2)": pair,
        "clinician alpha (interval)": si / (si + se),
        "machine ICC(3,2)": machine,
        "machine alpha (interval)": 2 * c / (a + 1),
        "machine - clinician pairs": machine - pair,
    }


@dataclass
class Tally:
    """Running coverage count of one interval over simulated studies."""

    truth: float
    nominal: float
    n: int = 0
    covered: int = 0
    undefined: int = 0
    width_sum: float = 0.0
    approximate: int = 0

    def add(self, low: float, high: float, *, approximate: bool = False) -> None:
        """One study's interval; an undefined (NaN) interval counts as not covering."""
        self.n += 1
        self.approximate += int(approximate)
        if not (np.isfinite(low) and np.isfinite(high)):
            self.undefined += 1
            return
        self.covered += int(low <= self.truth <= high)
        self.width_sum += high - low

    @property
    def coverage(self) -> float:
        return self.covered / self.n if self.n else float("nan")

    @property
    def mc_error(self) -> float:
        """Monte Carlo standard error of the coverage at the nominal level."""
        return float(np.sqrt(self.nominal * (1 - self.nominal) / self.n)) if self.n else np.nan

    @property
    def mean_width(self) -> float:
        defined = self.n - self.undefined
        return self.width_sum / defined if defined else float("nan")
