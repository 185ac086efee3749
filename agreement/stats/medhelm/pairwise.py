"""MedHELM step 5, clinician vs clinician: ICC(3,2) = ICC(C,2) for every pair of clinicians
sharing enough study items (on their z-scores over the shared items), then the plain
unweighted mean over pairs, as MedHELM reports it (a pair sharing 2 items counts as much as
one sharing 40). Pairs whose ICC is undefined (no variation) are left out and counted.

With an :class:`~agreement.stats.estimability.EstimabilityRule`, a pair MedHELM would
average is left out, and counted, when it shares fewer items than the rule asks; never for
its value (see that module for why). Without one, the mean is MedHELM's as published."""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import sparse

from ..bootstrap import ItemStatistic
from ..estimability import TOO_FEW_SHARED, EstimabilityRule, NotEstimableError
from ..icc import mean_squares
from .study_set import StudySet, study_set, weighted_sd

#: MedHELM averages every pair of clinicians sharing at least this many items.
MEDHELM_MIN_SHARED_ITEMS = 2


@dataclass(frozen=True)
class PairwiseAgreement:
    """MedHELM clinician-clinician agreement: plain mean of ICC(3,2) over clinician pairs."""

    mean_icc: float
    n_pairs: int  # pairs in the mean (sharing >= min_shared_items, defined, not left out)
    n_pairs_undefined: int  # pairs sharing enough items but with no variation
    n_clinicians: int
    n_items: int
    min_shared_items: int
    dropped_raters: tuple[object, ...]
    # rater_a, rater_b, n_shared, icc; with a rule also excluded (its reason code, or None)
    pairs: pd.DataFrame = field(repr=False, compare=False)
    form: str = "mean over clinician pairs of ICC(C,k), k=2 (= ICC(3,2)), unweighted"
    n_pairs_excluded: int = 0  # pairs with an ICC the estimability rule left out
    rule: EstimabilityRule | None = None

    @property
    def excluded_text(self) -> str:
        """Words for the pairs the rule left out, or "" (no rule, or none left out)."""
        if self.rule is None:
            return ""
        return self.rule.pairs_left_out(self.n_pairs_excluded, self.n_pairs + self.n_pairs_excluded)


def clinician_pairs(study: StudySet, min_shared_items: int) -> list[tuple[int, int]]:
    if min_shared_items < 2:
        raise ValueError("min_shared_items must be >= 2 (an ICC needs two items)")
    shared = study.rated.T @ study.rated
    r = len(study.clinicians)
    return [(i, j) for i, j in combinations(range(r), 2) if shared[i, j] >= min_shared_items]


def clinician_pairwise(
    scores: pd.DataFrame,
    *,
    min_shared_items: int = MEDHELM_MIN_SHARED_ITEMS,
    on_degenerate: str = "raise",
    rule: EstimabilityRule | None = None,
) -> PairwiseAgreement:
    """MedHELM step 5: ICC(3,2) per clinician pair on shared items, plain mean over pairs.

    ``min_shared_items``: the pairs the method averages (MedHELM: 2). ``rule``: which of them
    share enough items to be estimable; the others are left out of the mean and counted (the
    pair table keeps them, marked). Raises NotEstimableError when the rule leaves out every
    pair with an ICC, ValueError when no pair has an ICC at all."""
    study = study_set(scores, on_degenerate)
    z = study.x / study.sd
    rows = []
    for i, j in clinician_pairs(study, min_shared_items):
        both = (study.rated[:, i] > 0) & (study.rated[:, j] > 0)
        m = z[both][:, [i, j]]
        # The same relative guard as the bootstrap: a pair whose summed z-scores vary only at
        # rounding level has no between-item variance, so its ICC is undefined (not -1e31).
        sums = m.sum(axis=1)
        spread = float(((sums - sums.mean()) ** 2).sum())
        defined = spread > 1e-12 * float((m * m).sum())
        # ICC(C,k) = (MSR - MSE) / MSR, as agreement.stats.icc computes it, without the other
        # forms' F tests and intervals (a quantile per form and pair: 406 pairs at 29 clinicians)
        value = float("nan")
        if defined:
            ms = mean_squares(m)
            value = (ms.ms_rows - ms.ms_error) / ms.ms_rows
        rows.append((study.clinicians[i], study.clinicians[j], int(both.sum()), value))
    pairs = pd.DataFrame(rows, columns=["rater_a", "rater_b", "n_shared", "icc"])
    defined = pairs["icc"].notna()
    if not defined.any():
        raise ValueError(
            f"no pair of clinicians shares >= {min_shared_items} items with a defined ICC"
        )
    used = defined
    if rule is not None:
        pairs["excluded"] = [rule.check_pair(n_shared=n) for n in pairs["n_shared"]]
        used = defined & pairs["excluded"].isna()
    n_excluded = int((defined & ~used).sum())
    if rule is not None and not used.any():
        raise NotEstimableError(
            f"no clinician pair shares {rule.min_shared_items} items or more (the "
            f"{n_excluded} pair{'s' if n_excluded != 1 else ''} with an ICC share "
            f"{int(pairs.loc[defined, 'n_shared'].max())} at most)",
            codes=(TOO_FEW_SHARED,),
            count=n_excluded,
        )
    return PairwiseAgreement(
        mean_icc=float(pairs.loc[used, "icc"].mean()),
        n_pairs=int(used.sum()),
        n_pairs_undefined=int((~defined).sum()),
        n_clinicians=len(study.clinicians),
        n_items=len(study.items),
        min_shared_items=min_shared_items,
        dropped_raters=study.dropped,
        pairs=pairs,
        n_pairs_excluded=n_excluded,
        rule=rule,
    )


class ClinicianPairwiseStatistic(ItemStatistic):
    """Step 5 as an :class:`ItemStatistic` over the study items (see module docstring).

    Per pair (r, s) the weighted moments of the two raters' centred composites on their shared
    items are one sparse (n, 6P) matrix; z-scoring only rescales them (ICC(C,.) ignores a
    shift per rater), so ICC(C,2) = 4 C_uv / (C_uu + C_vv + 2 C_uv) with u = x_r / sd_r,
    v = x_s / sd_s and C the weighted (co)variance sums.

    With a ``rule``, the pairs are those sharing at least the rule's number of items too, as
    :func:`clinician_pairwise` averages them (the set is fixed by the full data).
    """

    def __init__(
        self,
        scores: pd.DataFrame,
        *,
        min_shared_items: int = MEDHELM_MIN_SHARED_ITEMS,
        restandardize: bool = True,
        on_degenerate: str = "raise",
        rule: EstimabilityRule | None = None,
    ) -> None:
        # The point estimate first: its error (not estimable, or no pair) is the one to report.
        self._direct = clinician_pairwise(
            scores, min_shared_items=min_shared_items, on_degenerate=on_degenerate, rule=rule
        ).mean_icc
        study = study_set(scores, on_degenerate)
        super().__init__(study.items)
        self.name = "mean pairwise ICC(3,2) clinician vs clinician"
        self.restandardize = restandardize
        self._study = study
        needed = max(min_shared_items, rule.min_shared_items if rule is not None else 0)
        pairs = clinician_pairs(study, needed)
        if not pairs:
            raise ValueError(f"no pair of clinicians shares >= {needed} items")
        self._ia = np.array([p[0] for p in pairs])
        self._ib = np.array([p[1] for p in pairs])
        x0 = np.nan_to_num(study.x)
        shared = study.rated[:, self._ia] * study.rated[:, self._ib]  # (n, P)
        xa, xb = x0[:, self._ia] * shared, x0[:, self._ib] * shared
        self._x0 = x0
        self._shared = sparse.csc_matrix(shared)
        self._moments = sparse.csc_matrix(np.hstack([shared, xa, xb, xa * xa, xb * xb, xa * xb]))
        self._p = len(pairs)

    def estimate(self) -> float:
        return self._direct

    def from_weights(self, weights: np.ndarray) -> np.ndarray:
        w = np.asarray(weights, dtype=np.float64)
        p = self._p
        s = np.asarray((self._moments.T @ w.T).T)  # (B, 6P)
        distinct = np.asarray((self._shared.T @ (w > 0).T.astype(np.float64)).T)  # (B, P)
        if self.restandardize:
            _, sd = weighted_sd(w, self._study.rated, self._x0)
        else:
            sd = np.broadcast_to(self._study.sd, (w.shape[0], len(self._study.clinicians)))
        sd_a, sd_b = sd[:, self._ia], sd[:, self._ib]
        n, sa, sb, saa, sbb, sab = (s[:, i * p : (i + 1) * p] for i in range(6))
        with np.errstate(divide="ignore", invalid="ignore"):
            cuu = (saa - sa * sa / n) / (sd_a * sd_a)
            cvv = (sbb - sb * sb / n) / (sd_b * sd_b)
            cuv = (sab - sa * sb / n) / (sd_a * sd_b)
            den = cuu + cvv + 2.0 * cuv
            pair_icc = 4.0 * cuv / den
            # Rounding-level denominators (no variation on the shared items) are zero.
            scale = saa / n / (sd_a * sd_a) + sbb / n / (sd_b * sd_b)
        valid = (distinct >= 2) & np.isfinite(pair_icc) & (den > 1e-12 * scale)
        pair_icc = np.where(valid, pair_icc, 0.0)
        count = valid.sum(axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(count > 0, pair_icc.sum(axis=1) / count, np.nan)
