"""MedHELM's agreement method (Bedi et al., "MedHELM", arXiv 2505.23802 v2, 2025, Table 2 and
its methods section), on the long score table
``item, criterion, rater, rater_kind (clinician | judge | jury | metric), value``.

Method, step by step
--------------------
1. Composite: per rater and item, the mean over criteria (missing criteria are skipped; the
   number used is kept in ``n_criteria``).
2. Study items: the items rated by at least one clinician (the clinician validation set).
   Every rater, clinician or machine, is standardised over its own items *within this set*,
   so that a machine that also scored thousands of benchmark items is put on the same item
   sample as the clinicians, and the clinician z-scores are identical in the machine and the
   clinician-clinician analyses (which makes their difference meaningful).
3. z-score within rater: z = (x - mean_rater) / sd_rater with the sample SD (ddof = 1).
   A rater with fewer than 2 study items or constant composites has no SD: by default that
   raises ValueError naming the rater; with ``on_degenerate="drop"`` the rater is left out of
   the analysis and listed in ``dropped_raters``.
4. Machine vs clinicians: per item, two "raters": the mean of the clinicians' z-composites and
   the machine's z-score; ICC(3,k) = ICC(C,k) with k = 2, (MS_items - MS_error) / MS_items,
   over the study items the machine scored.
5. Clinician vs clinician: ICC(3,2) = ICC(C,2) for every pair of clinicians sharing >= 2
   study items (on their z-scores over the shared items), then the plain unweighted mean over
   pairs, as MedHELM reports it (a pair sharing 2 items counts as much as one sharing 40).
   Pairs whose ICC is undefined (no variation on the shared items) are left out and counted.

Bootstrap (95% CI; MedHELM does not give details, these are ours)
-----------------------------------------------------------------
Items of the study set are resampled with replacement, and the whole pipeline after step 1 is
recomputed on each resample (``restandardize=True``, default): each rater's mean and SD are
recomputed from its items as they appear in the resample (with multiplicity), then step 4 or 5.
``restandardize=False`` keeps the full-data z-scores fixed (conditional on standardisation).
For the pairwise statistic the *set of pairs* is fixed by the full data; in a resample a pair
contributes when at least 2 distinct shared items are drawn and its ICC is defined, and the
resample's value is the plain mean over the contributing pairs (a resample with none is
dropped and counted). Repeated items count with their multiplicity in every sum, exactly as
if the duplicated rows were in the data. For step 4, a clinician whose resampled items give
no SD (fewer than 2 distinct items or constant) is left out of that resample's item means;
an item left with no clinician is left out of that resample.
All resamples are evaluated at once with matrix products over item multiplicities (see
:mod:`agreement.stats.bootstrap`); the BCa acceleration uses the leave-one-item-out jackknife
of the same statistic.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import sparse

from ._common import MACHINE_KINDS, RATER_KINDS, SCORE_COLUMNS, examples, require_columns
from .bootstrap import (
    DEFAULT_MAX_CELLS,
    BootstrapResult,
    ItemStatistic,
    bootstrap_ci,
    bootstrap_difference,
)
from .icc import IccTable, icc

DEGENERATE_POLICIES: tuple[str, ...] = ("raise", "drop")


# --------------------------------------------------------------------------------------------
# Steps 1-3


def composite_scores(scores: pd.DataFrame) -> pd.DataFrame:
    """Composite per rater and item: the mean over criteria (step 1).

    Returns columns ``item, rater, rater_kind, composite, n_criteria`` sorted by rater, item.
    Rows with a missing value are skipped. Raises ValueError on missing columns, unknown
    rater kinds, a rater with more than one kind, or duplicate (item, criterion, rater) rows.
    """
    require_columns(scores, SCORE_COLUMNS, what="score table")
    df = scores.loc[:, list(SCORE_COLUMNS)].copy()
    try:
        df["value"] = pd.to_numeric(df["value"], errors="raise").astype(np.float64)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"column 'value' must be numeric: {exc}") from exc
    kinds = set(df["rater_kind"].unique())
    unknown = kinds - RATER_KINDS
    if unknown:
        raise ValueError(
            f"unknown rater_kind value(s) {sorted(map(str, unknown))}; "
            f"expected {sorted(RATER_KINDS)}"
        )
    n_kinds = df.groupby("rater", sort=False)["rater_kind"].nunique()
    if (n_kinds > 1).any():
        raise ValueError(
            f"rater(s) with more than one rater_kind: {examples(n_kinds.index[n_kinds > 1])}"
        )
    dup = df.duplicated(["item", "criterion", "rater"], keep=False)
    if dup.any():
        bad = df.loc[dup, ["item", "criterion", "rater"]].drop_duplicates()
        raise ValueError(
            f"{len(bad)} duplicate (item, criterion, rater) row(s), e.g. "
            f"{examples(list(bad.itertuples(index=False, name=None)))}"
        )
    df = df.loc[df["value"].notna()]
    out = (
        df.groupby(["rater", "item"], sort=True)
        .agg(
            rater_kind=("rater_kind", "first"),
            composite=("value", "mean"),
            n_criteria=("value", "size"),
        )
        .reset_index()
    )
    return out.loc[:, ["item", "rater", "rater_kind", "composite", "n_criteria"]]


def zscore_within_rater(composites: pd.DataFrame, *, on_degenerate: str = "raise") -> pd.DataFrame:
    """Add column ``z`` = (composite - rater mean) / rater SD, SD with ddof = 1 (step 3).

    ``composites`` has at least columns ``rater`` and ``composite``. A rater with fewer than
    2 composites or constant composites has no usable SD: ``on_degenerate="raise"`` (default)
    raises ValueError naming them; ``"drop"`` removes their rows. The rows dropped are listed
    in ``out.attrs["dropped_raters"]``.
    """
    if on_degenerate not in DEGENERATE_POLICIES:
        raise ValueError(f"on_degenerate must be one of {DEGENERATE_POLICIES}")
    require_columns(composites, ("rater", "composite"), what="composite table")
    g = composites.groupby("rater", sort=True)["composite"]
    mean = g.transform("mean")
    sd = g.transform("std")  # pandas' groupby std is the sample SD (ddof = 1)
    bad_mask = ~(sd > 0)  # also catches NaN: a rater with a single item
    bad = sorted(composites.loc[bad_mask, "rater"].unique().tolist(), key=str)
    if bad and on_degenerate == "raise":
        raise ValueError(
            f"rater(s) {examples(bad)} have fewer than 2 items or constant composite scores, "
            "so their z-scores are undefined; remove them or pass on_degenerate='drop'"
        )
    out = composites.loc[~bad_mask].copy()
    out["z"] = (out["composite"] - mean[~bad_mask]) / sd[~bad_mask]
    out.attrs["dropped_raters"] = tuple(bad)
    return out


# --------------------------------------------------------------------------------------------
# Shared preparation


@dataclass(frozen=True)
class _Study:
    items: pd.Index  # study items (rated by >= 1 clinician), sorted
    clinicians: pd.Index
    x: np.ndarray  # (n, R) clinician composites centred on the rater's mean; NaN = not rated
    rated: np.ndarray  # (n, R) float 0/1
    sd: np.ndarray  # (R,) full-data SD (ddof = 1)
    dropped: tuple[object, ...]
    composites: pd.DataFrame  # composites restricted to the study items (all rater kinds)


def _study(scores: pd.DataFrame, on_degenerate: str) -> _Study:
    comp = composite_scores(scores)
    clin = comp.loc[comp["rater_kind"] == "clinician"]
    if clin.empty:
        raise ValueError("the score table has no clinician ratings")
    items = pd.Index(np.sort(clin["item"].unique()), name="item")
    comp = comp.loc[comp["item"].isin(items)].reset_index(drop=True)
    clin = comp.loc[comp["rater_kind"] == "clinician"]
    z = zscore_within_rater(clin, on_degenerate=on_degenerate)
    dropped = z.attrs["dropped_raters"]
    clinicians = pd.Index(np.sort(z["rater"].unique()), name="rater")
    wide = z.pivot(index="item", columns="rater", values="composite").reindex(
        index=items, columns=clinicians
    )
    x = wide.to_numpy(dtype=np.float64)
    mean = np.nanmean(x, axis=0)
    sd = np.nanstd(x, axis=0, ddof=1)
    return _Study(
        items=items,
        clinicians=clinicians,
        x=x - mean,
        rated=(~np.isnan(x)).astype(np.float64),
        sd=sd,
        dropped=dropped,
        composites=comp,
    )


def _machine_vector(study: _Study, machine: object) -> tuple[np.ndarray, float]:
    comp = study.composites
    rows = comp.loc[comp["rater"] == machine]
    if rows.empty:
        all_raters = comp["rater"].unique().tolist()
        raise ValueError(
            f"machine rater {machine!r} has no scores on the clinician-rated items "
            f"(raters there: {examples(all_raters)})"
        )
    kind = rows["rater_kind"].iloc[0]
    if kind not in MACHINE_KINDS:
        raise ValueError(
            f"rater {machine!r} has rater_kind {kind!r}, not a machine kind {sorted(MACHINE_KINDS)}"
        )
    y = rows.set_index("item")["composite"].reindex(study.items).to_numpy(dtype=np.float64)
    sd = float(np.nanstd(y, ddof=1)) if np.count_nonzero(~np.isnan(y)) >= 2 else float("nan")
    if not sd > 0:
        raise ValueError(
            f"machine rater {machine!r} has fewer than 2 study items or constant composites; "
            "its z-scores are undefined"
        )
    return y - np.nanmean(y), sd


def _weighted_sd(
    weights: np.ndarray, rated: np.ndarray, x0: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Per-rater weighted mean and SD (ddof = 1, frequency weights) for each resample.

    weights (B, n); rated (n, R) 0/1; x0 (n, R) values with NaN replaced by 0.
    Returns (mean, sd), each (B, R); sd is NaN where fewer than 2 draws or constant."""
    cnt = weights @ rated
    s1 = weights @ x0
    s2 = weights @ (x0 * x0)
    with np.errstate(divide="ignore", invalid="ignore"):
        mean = s1 / cnt
        var = (s2 - s1 * mean) / (cnt - 1)
        # Relative guard: a variance at rounding level of the raw second moment is zero.
        var = np.where(var > 1e-12 * np.maximum(s2 / cnt, 1e-300), var, np.nan)
    return mean, np.sqrt(var)


# --------------------------------------------------------------------------------------------
# Step 4: machine vs clinicians


@dataclass(frozen=True)
class MachineAgreement:
    """MedHELM machine-vs-clinicians agreement: ICC(3,2) = ICC(C,k), k = 2."""

    machine: object
    icc: float
    n_items: int
    n_clinicians: int
    dropped_raters: tuple[object, ...]
    icc_table: IccTable = field(repr=False)  # all forms, F test and F interval of the n x 2
    table: pd.DataFrame = field(repr=False, compare=False)  # item, clinician_z, machine_z, ...
    form: str = "ICC(C,k), k=2 (= ICC(3,2)); z-scores within rater (ddof=1)"


def machine_vs_clinicians(
    scores: pd.DataFrame, *, machine: object, on_degenerate: str = "raise"
) -> MachineAgreement:
    """MedHELM step 4 for one machine rater (a judge, the jury aggregate, or a metric)."""
    study = _study(scores, on_degenerate)
    y, sd_m = _machine_vector(study, machine)
    z_clin = study.x / study.sd  # NaN where not rated
    n_clin = study.rated.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        clin_mean = np.nansum(np.nan_to_num(z_clin), axis=1) / n_clin
    z_m = y / sd_m
    keep = ~np.isnan(y) & (n_clin > 0)
    table = pd.DataFrame(
        {
            "item": study.items[keep],
            "clinician_z": clin_mean[keep],
            "machine_z": z_m[keep],
            "n_clinicians": n_clin[keep].astype(int),
        }
    )
    if keep.sum() < 2:
        raise ValueError(f"fewer than 2 study items scored by machine {machine!r}")
    result = icc(table[["clinician_z", "machine_z"]].to_numpy())
    return MachineAgreement(
        machine=machine,
        icc=result.get("ICC(C,k)").icc,
        n_items=int(keep.sum()),
        n_clinicians=int((study.rated[keep].sum(axis=0) > 0).sum()),
        dropped_raters=study.dropped,
        icc_table=result,
        table=table,
    )


class MachineVsClinicianStatistic(ItemStatistic):
    """Step 4 as an :class:`ItemStatistic` over the study items (see module docstring)."""

    def __init__(
        self,
        scores: pd.DataFrame,
        *,
        machine: object,
        restandardize: bool = True,
        on_degenerate: str = "raise",
    ) -> None:
        study = _study(scores, on_degenerate)
        super().__init__(study.items)
        self.name = f"ICC(3,2) {machine} vs clinicians"
        self.machine = machine
        self.restandardize = restandardize
        self._study = study
        y, self._sd_m = _machine_vector(study, machine)
        self._has_m = (~np.isnan(y)).astype(np.float64)
        self._y0 = np.nan_to_num(y)
        self._x0 = np.nan_to_num(study.x)
        self._rated = study.rated
        self._sparse_rated = sparse.csr_matrix(study.rated)
        self._sparse_x0 = sparse.csr_matrix(self._x0)
        self._direct = machine_vs_clinicians(
            scores, machine=machine, on_degenerate=on_degenerate
        ).icc

    def estimate(self) -> float:
        return self._direct

    def from_weights(self, weights: np.ndarray) -> np.ndarray:
        w = np.asarray(weights, dtype=np.float64)
        b = w.shape[0]
        if self.restandardize:
            mean_c, sd_c = _weighted_sd(w, self._rated, self._x0)
            mean_m, sd_m = _weighted_sd(w, self._has_m[:, None], self._y0[:, None])
            mean_m, sd_m = mean_m[:, 0], sd_m[:, 0]
        else:
            mean_c = np.zeros((b, len(self._study.clinicians)))
            sd_c = np.broadcast_to(self._study.sd, mean_c.shape)
            mean_m = np.zeros(b)
            sd_m = np.full(b, self._sd_m)
        ok = np.isfinite(sd_c) & (sd_c > 0)
        inv = np.where(ok, 1.0 / np.where(ok, sd_c, 1.0), 0.0)  # (B, R)
        # Clinician mean z per item: sum_r A_ir ok_br (x_ir - m_br) / sd_br / sum_r A_ir ok_br
        num = (self._sparse_x0 @ inv.T - self._sparse_rated @ (np.nan_to_num(mean_c) * inv).T).T
        den = (self._sparse_rated @ ok.T.astype(np.float64)).T  # (B, n)
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where(den > 0, num / den, 0.0)
            z = (self._y0[None, :] - mean_m[:, None]) / sd_m[:, None]
        use = w * self._has_m[None, :] * (den > 0)
        z = np.where(use > 0, z, 0.0)
        return _consistency_icc2(use, c + z, c - z)


def _consistency_icc2(w: np.ndarray, a: np.ndarray, d: np.ndarray) -> np.ndarray:
    """ICC(C,2) = 1 - Var_w(u - v) / Var_w(u + v) for two columns u, v, with a = u + v,
    d = u - v and item weights w (B, n): for k = 2, MSR = SS(a)/2/(N-1), MSE = SS(d)/2/(N-1)
    so (MSR - MSE)/MSR = 1 - SS(d)/SS(a). NaN with fewer than 2 distinct items."""
    big_n = w.sum(axis=1)
    distinct = np.count_nonzero(w > 0, axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        sa = (w * a).sum(axis=1)
        sd = (w * d).sum(axis=1)
        ssa = (w * a * a).sum(axis=1) - sa * sa / big_n
        ssd = (w * d * d).sum(axis=1) - sd * sd / big_n
        out = 1.0 - ssd / ssa
    return np.where((distinct >= 2) & (ssa > 0), out, np.nan)


# --------------------------------------------------------------------------------------------
# Step 5: clinician vs clinician


@dataclass(frozen=True)
class PairwiseAgreement:
    """MedHELM clinician-clinician agreement: plain mean of ICC(3,2) over clinician pairs."""

    mean_icc: float
    n_pairs: int  # pairs with an ICC (sharing >= min_shared_items and defined)
    n_pairs_undefined: int  # pairs sharing enough items but with no variation
    n_clinicians: int
    n_items: int
    min_shared_items: int
    dropped_raters: tuple[object, ...]
    pairs: pd.DataFrame = field(repr=False, compare=False)  # rater_a, rater_b, n_shared, icc
    form: str = "mean over clinician pairs of ICC(C,k), k=2 (= ICC(3,2)), unweighted"


def _pairs(study: _Study, min_shared_items: int) -> list[tuple[int, int]]:
    if min_shared_items < 2:
        raise ValueError("min_shared_items must be >= 2 (an ICC needs two items)")
    shared = study.rated.T @ study.rated
    r = len(study.clinicians)
    return [(i, j) for i, j in combinations(range(r), 2) if shared[i, j] >= min_shared_items]


def clinician_pairwise(
    scores: pd.DataFrame, *, min_shared_items: int = 2, on_degenerate: str = "raise"
) -> PairwiseAgreement:
    """MedHELM step 5: ICC(3,2) per clinician pair on shared items, plain mean over pairs."""
    study = _study(scores, on_degenerate)
    z = study.x / study.sd
    rows = []
    for i, j in _pairs(study, min_shared_items):
        both = (study.rated[:, i] > 0) & (study.rated[:, j] > 0)
        m = z[both][:, [i, j]]
        # The same relative guard as the bootstrap: a pair whose summed z-scores vary only at
        # rounding level has no between-item variance, so its ICC is undefined (not -1e31).
        sums = m.sum(axis=1)
        spread = float(((sums - sums.mean()) ** 2).sum())
        defined = spread > 1e-12 * float((m * m).sum())
        value = icc(m).get("ICC(C,k)").icc if defined else float("nan")
        rows.append((study.clinicians[i], study.clinicians[j], int(both.sum()), value))
    pairs = pd.DataFrame(rows, columns=["rater_a", "rater_b", "n_shared", "icc"])
    defined = pairs["icc"].notna()
    if not defined.any():
        raise ValueError(
            f"no pair of clinicians shares >= {min_shared_items} items with a defined ICC"
        )
    return PairwiseAgreement(
        mean_icc=float(pairs.loc[defined, "icc"].mean()),
        n_pairs=int(defined.sum()),
        n_pairs_undefined=int((~defined).sum()),
        n_clinicians=len(study.clinicians),
        n_items=len(study.items),
        min_shared_items=min_shared_items,
        dropped_raters=study.dropped,
        pairs=pairs,
    )


class ClinicianPairwiseStatistic(ItemStatistic):
    """Step 5 as an :class:`ItemStatistic` over the study items (see module docstring).

    Per pair (r, s) the weighted moments of the two raters' centred composites on their shared
    items are one sparse (n, 6P) matrix; z-scoring only rescales them (ICC(C,.) ignores a
    shift per rater), so ICC(C,2) = 4 C_uv / (C_uu + C_vv + 2 C_uv) with u = x_r / sd_r,
    v = x_s / sd_s and C the weighted (co)variance sums.
    """

    def __init__(
        self,
        scores: pd.DataFrame,
        *,
        min_shared_items: int = 2,
        restandardize: bool = True,
        on_degenerate: str = "raise",
    ) -> None:
        study = _study(scores, on_degenerate)
        super().__init__(study.items)
        self.name = "mean pairwise ICC(3,2) clinician vs clinician"
        self.restandardize = restandardize
        self._study = study
        pairs = _pairs(study, min_shared_items)
        if not pairs:
            raise ValueError(f"no pair of clinicians shares >= {min_shared_items} items")
        self._ia = np.array([p[0] for p in pairs])
        self._ib = np.array([p[1] for p in pairs])
        x0 = np.nan_to_num(study.x)
        shared = study.rated[:, self._ia] * study.rated[:, self._ib]  # (n, P)
        xa, xb = x0[:, self._ia] * shared, x0[:, self._ib] * shared
        self._x0 = x0
        self._shared = sparse.csc_matrix(shared)
        self._moments = sparse.csc_matrix(np.hstack([shared, xa, xb, xa * xa, xb * xb, xa * xb]))
        self._p = len(pairs)
        self._direct = clinician_pairwise(
            scores, min_shared_items=min_shared_items, on_degenerate=on_degenerate
        ).mean_icc

    def estimate(self) -> float:
        return self._direct

    def from_weights(self, weights: np.ndarray) -> np.ndarray:
        w = np.asarray(weights, dtype=np.float64)
        p = self._p
        s = np.asarray((self._moments.T @ w.T).T)  # (B, 6P)
        distinct = np.asarray((self._shared.T @ (w > 0).T.astype(np.float64)).T)  # (B, P)
        if self.restandardize:
            _, sd = _weighted_sd(w, self._study.rated, self._x0)
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


# --------------------------------------------------------------------------------------------
# Bootstrap wrappers


def bootstrap_machine_vs_clinicians(
    scores: pd.DataFrame,
    *,
    machine: object,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    method: str = "bca",
    seed: int | np.random.Generator | None = None,
    restandardize: bool = True,
    on_degenerate: str = "raise",
    max_cells: int = DEFAULT_MAX_CELLS,
) -> BootstrapResult:
    """Item-bootstrap interval for :func:`machine_vs_clinicians` (see module docstring)."""
    stat = MachineVsClinicianStatistic(
        scores, machine=machine, restandardize=restandardize, on_degenerate=on_degenerate
    )
    return bootstrap_ci(
        stat,
        n_resamples=n_resamples,
        confidence=confidence,
        method=method,
        seed=seed,
        max_cells=max_cells,
    )


def bootstrap_clinician_pairwise(
    scores: pd.DataFrame,
    *,
    min_shared_items: int = 2,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    method: str = "bca",
    seed: int | np.random.Generator | None = None,
    restandardize: bool = True,
    on_degenerate: str = "raise",
    max_cells: int = DEFAULT_MAX_CELLS,
) -> BootstrapResult:
    """Item-bootstrap interval for :func:`clinician_pairwise` (see module docstring)."""
    stat = ClinicianPairwiseStatistic(
        scores,
        min_shared_items=min_shared_items,
        restandardize=restandardize,
        on_degenerate=on_degenerate,
    )
    return bootstrap_ci(
        stat,
        n_resamples=n_resamples,
        confidence=confidence,
        method=method,
        seed=seed,
        max_cells=max_cells,
    )


def bootstrap_machine_minus_clinicians(
    scores: pd.DataFrame,
    *,
    machine: object,
    min_shared_items: int = 2,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    method: str = "bca",
    seed: int | np.random.Generator | None = None,
    restandardize: bool = True,
    on_degenerate: str = "raise",
    max_cells: int = DEFAULT_MAX_CELLS,
) -> BootstrapResult:
    """Interval for (machine-vs-clinicians ICC) - (clinician-clinician mean ICC), both
    recomputed on the same item resamples. An interval above 0 means the machine agrees with
    the clinicians' consensus better than clinicians agree with each other (note the two are
    not the same kind of quantity: the first compares one rater with a *mean* of clinicians)."""
    first = MachineVsClinicianStatistic(
        scores, machine=machine, restandardize=restandardize, on_degenerate=on_degenerate
    )
    second = ClinicianPairwiseStatistic(
        scores,
        min_shared_items=min_shared_items,
        restandardize=restandardize,
        on_degenerate=on_degenerate,
    )
    return bootstrap_difference(
        first,
        second,
        n_resamples=n_resamples,
        confidence=confidence,
        method=method,
        seed=seed,
        max_cells=max_cells,
    )
