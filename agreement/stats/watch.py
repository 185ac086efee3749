"""Agreement while clinicians rate: the panel's agreement so far, each clinician's leniency and
agreement with the others (flagged when far from the panel), and their drift over batches of
submission order.

Input: one row per submitted rating, columns ``item, criterion, rater, value, submitted_at``
(``submitted_at`` orders the ratings; any sortable type).

- Agreement so far is the study's own clinician-clinician statistic, MedHELM's mean over
  clinician pairs of ICC(3,2) on within-rater z-scored composites (:mod:`.medhelm.pairwise`),
  with its item-bootstrap BCa interval (:mod:`.bootstrap`).
- Leniency is a bias, which within-rater z-scores remove, so it is measured on the panel's
  scale: each criterion is z-scored over every clinician's ratings of it (panel mean and SD,
  ddof = 1), and a rating's offset is its z minus the mean z of the other clinicians on the
  same item (the composite: the same on the mean z over criteria). A clinician's leniency is
  their mean offset over the items they share with someone, with a t interval over items.
- Agreement with the others is the mean of the clinician's pairwise ICC(3,2) (the pairs of
  the statistic above); it is consistency, blind to a shift, which leniency measures.

The flag rule (:class:`WatchRule`), stated on the page: a clinician sharing at least
``min_shared_items`` items with the others is flagged lenient (severe) when their composite
mean offset is at least ``leniency_sd`` panel SDs above (below) the median of the other
clinicians' mean offsets and its interval excludes that median (the median, because a lenient
clinician pulls every other clinician's offset down by about their bias over the panel size;
with fewer than two others no one is flagged, as either of two could be the one off); and
flagged for low agreement when their mean pairwise ICC is more than ``agreement_gap`` below
the mean of the pairs without them. A "beyond 2 SD of the panel's
leniencies" rule is not used: with n clinicians no one can lie beyond (n-1)/sqrt(n) sample
SDs of the panel, so it can never flag in a panel of 5 or fewer.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as scipy_stats

from .bootstrap import bootstrap_ci
from .common import require_columns
from .medhelm import ClinicianPairwiseStatistic, clinician_pairwise

WATCH_COLUMNS: tuple[str, ...] = ("item", "criterion", "rater", "value", "submitted_at")
COMPOSITE = "composite"
#: Submissions spanning at least this many days are grouped by ISO week, else by order.
WEEKS_FROM_DAYS = 14


@dataclass(frozen=True)
class WatchRule:
    """When a clinician is flagged (see the module docstring)."""

    min_shared_items: int = 10
    leniency_sd: float = 0.5
    agreement_gap: float = 0.2
    confidence: float = 0.95

    def text(self) -> str:
        level = round(100 * self.confidence)
        return (
            f"Flagged only with at least {self.min_shared_items} items shared with other "
            f"clinicians and at least two others to compare with: lenient (severe) when the "
            f"mean z-offset of the composite is at least {self.leniency_sd:g} panel SD above "
            f"(below) the median of the other clinicians' mean z-offsets and its {level}% "
            f"interval excludes that median; low agreement when the clinician's mean pairwise "
            f"ICC(3,2) is more than {self.agreement_gap:g} below the mean of the pairs "
            f"without them."
        )


def _finite(x: float | None) -> float | None:
    return float(x) if x is not None and math.isfinite(float(x)) else None


def panel_offsets(ratings: pd.DataFrame) -> pd.DataFrame:
    """Per rating (and per composite, criterion ``"composite"``) on items rated by >= 2
    clinicians: ``z`` on the panel's scale and ``offset`` = z - mean z of the others."""
    require_columns(ratings, WATCH_COLUMNS, what="ratings")
    df = ratings.loc[ratings["value"].notna(), list(WATCH_COLUMNS)].copy()
    df["value"] = df["value"].astype(np.float64)
    if df.empty:
        return pd.DataFrame(columns=["item", "criterion", "rater", "z", "submitted_at", "offset"])
    by_criterion = df.groupby("criterion")["value"]
    sd = by_criterion.transform("std")
    df = df.loc[sd > 0].copy()  # a criterion every rating gives the same value has no scale
    df["z"] = (df["value"] - by_criterion.transform("mean")[df.index]) / sd[df.index]
    composite = (
        df.groupby(["item", "rater"], sort=False)
        .agg(z=("z", "mean"), submitted_at=("submitted_at", "max"))
        .reset_index()
        .assign(criterion=COMPOSITE)
    )
    out = pd.concat(
        [df[["item", "criterion", "rater", "z", "submitted_at"]], composite], ignore_index=True
    )
    g = out.groupby(["item", "criterion"])["z"]
    n = g.transform("size")
    out = out.loc[n >= 2].copy()
    out["offset"] = out["z"] - (g.transform("sum")[out.index] - out["z"]) / (n[out.index] - 1)
    return out.reset_index(drop=True)


def _mean_interval(x: np.ndarray, confidence: float) -> tuple[float, float | None, float | None]:
    mean = float(x.mean())
    if len(x) < 2:
        return mean, None, None
    half = scipy_stats.t.ppf(0.5 + confidence / 2, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    return mean, _finite(mean - half), _finite(mean + half)


def leniency(offsets: pd.DataFrame, rule: WatchRule) -> dict[str, dict[str, dict[str, Any]]]:
    """Per rater, per criterion (and composite): mean offset, its interval, items, the median
    of the other clinicians' mean offsets, and the flag (lenient, severe or None)."""
    out: dict[str, dict[str, dict[str, Any]]] = {}
    for (rater, criterion), rows in offsets.groupby(["rater", "criterion"], sort=True):
        mean, low, high = _mean_interval(rows["offset"].to_numpy(), rule.confidence)
        out.setdefault(str(rater), {})[str(criterion)] = {
            "mean_offset": _finite(mean),
            "ci_low": low,
            "ci_high": high,
            "n_items": len(rows),
        }
    for rater, by_criterion in out.items():
        for criterion, row in by_criterion.items():
            others = [
                o[criterion]["mean_offset"]
                for name, o in out.items()
                if name != rater and criterion in o and o[criterion]["mean_offset"] is not None
            ]
            # A lenient clinician pulls the others' offsets down as well: the panel is their
            # median, and with one other clinician nobody can tell which of the two is off.
            panel = float(np.median(others)) if len(others) >= 2 else None
            row["panel_median"] = panel
            row["flag"] = _leniency_flag(row, panel, rule)
    return out


def _leniency_flag(row: dict[str, Any], panel: float | None, rule: WatchRule) -> str | None:
    mean, low, high = row["mean_offset"], row["ci_low"], row["ci_high"]
    if panel is None or mean is None or low is None or high is None:
        return None
    if row["n_items"] < rule.min_shared_items or abs(mean - panel) < rule.leniency_sd:
        return None
    if low <= panel <= high:
        return None
    return "lenient" if mean > panel else "severe"


def _score_table(ratings: pd.DataFrame) -> pd.DataFrame:
    scores = ratings.loc[ratings["value"].notna(), ["item", "criterion", "rater", "value"]].copy()
    scores["rater_kind"] = "clinician"
    scores["value"] = scores["value"].astype(np.float64)
    return scores


def _pairs(ratings: pd.DataFrame) -> pd.DataFrame | None:
    try:
        return clinician_pairwise(_score_table(ratings), on_degenerate="drop").pairs
    except ValueError:  # no pair of clinicians with a defined ICC yet
        return None


def agreement_with_others(pairs: pd.DataFrame | None, rule: WatchRule) -> dict[str, dict]:
    """Per rater: mean pairwise ICC(3,2) over their pairs sharing enough items, the same over
    the pairs without them, and whether it is more than the rule's gap below."""
    if pairs is None:
        return {}
    usable = pairs.loc[pairs["icc"].notna() & (pairs["n_shared"] >= rule.min_shared_items)]
    raters = sorted(set(pairs["rater_a"]) | set(pairs["rater_b"]), key=str)
    out = {}
    for rater in raters:
        mine = (usable["rater_a"] == rater) | (usable["rater_b"] == rater)
        own = usable.loc[mine, "icc"]
        others = usable.loc[~mine, "icc"]
        own_mean = _finite(own.mean()) if len(own) else None
        others_mean = _finite(others.mean()) if len(others) else None
        low = (
            own_mean is not None
            and others_mean is not None
            and own_mean < others_mean - rule.agreement_gap
        )
        out[str(rater)] = {
            "mean_icc": own_mean,
            "n_pairs": len(own),
            "others_mean_icc": others_mean,
            "flag": "low agreement" if low else None,
        }
    return out


def panel_agreement(ratings: pd.DataFrame, *, n_resamples: int, seed: int) -> dict[str, Any]:
    """Mean pairwise ICC(3,2) so far with its BCa interval, or why there is none yet."""
    scores = _score_table(ratings)
    try:
        statistic = ClinicianPairwiseStatistic(scores, on_degenerate="drop")
        pairs = clinician_pairwise(scores, on_degenerate="drop")
    except ValueError as exc:
        return {"estimate": None, "reason": str(exc)}
    boot = bootstrap_ci(statistic, n_resamples=n_resamples, seed=seed)
    shared = scores.groupby("item")["rater"].nunique()
    return {
        "estimate": _finite(boot.estimate),
        "ci_low": _finite(boot.ci_low),
        "ci_high": _finite(boot.ci_high),
        "confidence": boot.confidence,
        "n_items": int((shared >= 2).sum()),
        "n_pairs": pairs.n_pairs,
        "n_clinicians": pairs.n_clinicians,
        "form": pairs.form,
        "interval": f"item bootstrap ({'BCa' if boot.method == 'bca' else boot.method}), "
        f"{n_resamples} resamples, seed {seed}",
        "reason": None,
    }


def batch_labels(submitted_at: pd.Series, *, max_batches: int = 4, min_size: int = 10) -> pd.Series:
    """The batch of each submission: its ISO week when the submissions span two weeks or
    more, else one of up to ``max_batches`` equal runs of submission order."""
    times = pd.to_datetime(submitted_at, utc=True, errors="coerce")
    if times.notna().all() and (times.max() - times.min()).days >= WEEKS_FROM_DAYS:
        iso = times.dt.isocalendar()
        return iso["year"].astype(str) + "-W" + iso["week"].astype(str).str.zfill(2)
    order = submitted_at.rank(method="first").astype(int) - 1
    n = len(submitted_at)
    k = max(1, min(max_batches, n // min_size))
    index = (order * k) // max(n, 1)
    bounds = {
        b: (int(order[index == b].min()) + 1, int(order[index == b].max()) + 1) for b in set(index)
    }
    return index.map(lambda b: f"ratings {bounds[b][0]}-{bounds[b][1]}")


def drift(ratings: pd.DataFrame, offsets: pd.DataFrame, rule: WatchRule) -> list[dict[str, Any]]:
    """Per batch of submission order: the panel's mean pairwise ICC on the items whose last
    rating came in that batch (over the pairs sharing the rule's minimum of those items; None
    when no pair does), and each clinician's composite leniency in it."""
    per_rating = ratings.groupby(["item", "rater"], sort=False)["submitted_at"].max().reset_index()
    per_rating["batch"] = batch_labels(per_rating["submitted_at"])
    first_seen = per_rating.sort_values("submitted_at").drop_duplicates("batch")["batch"].tolist()
    item_batch = per_rating.sort_values("submitted_at").groupby("item")["batch"].last()
    composite = offsets.loc[offsets["criterion"] == COMPOSITE].merge(
        per_rating[["item", "rater", "batch"]], on=["item", "rater"]
    )
    out = []
    for batch in first_seen:
        items = item_batch.index[item_batch == batch]
        pairs = _pairs(ratings.loc[ratings["item"].isin(items)])
        if pairs is not None:
            pairs = pairs.loc[pairs["icc"].notna() & (pairs["n_shared"] >= rule.min_shared_items)]
        rows = composite.loc[composite["batch"] == batch]
        out.append(
            {
                "batch": batch,
                "n_items": len(items),
                "n_pairs": 0 if pairs is None else len(pairs),
                "agreement": _finite(pairs["icc"].mean())
                if pairs is not None and len(pairs)
                else None,
                "leniency": {
                    str(r): _finite(g["offset"].mean()) for r, g in rows.groupby("rater", sort=True)
                },
            }
        )
    return out


def watch_summary(
    ratings: pd.DataFrame, *, rule: WatchRule | None = None, n_resamples: int = 1000, seed: int = 0
) -> dict[str, Any]:
    """Everything the dashboard shows, as plain JSON-ready values."""
    rule = rule or WatchRule()
    require_columns(ratings, WATCH_COLUMNS, what="ratings")
    ratings = ratings.loc[ratings["value"].notna()]
    offsets = panel_offsets(ratings)
    lenient = leniency(offsets, rule)
    agreeing = agreement_with_others(_pairs(ratings), rule)
    raters = sorted(set(ratings["rater"].astype(str)), key=str)
    return {
        "rule": {**asdict(rule), "text": rule.text()},
        "n_ratings": len(ratings),
        "panel": panel_agreement(ratings, n_resamples=n_resamples, seed=seed),
        "raters": [
            {
                "rater": r,
                "leniency": lenient.get(r, {}),
                "agreement": agreeing.get(r),
                "flags": [
                    f
                    for f in (
                        lenient.get(r, {}).get(COMPOSITE, {}).get("flag"),
                        (agreeing.get(r) or {}).get("flag"),
                    )
                    if f
                ],
            }
            for r in raters
        ],
        "drift": drift(ratings, offsets, rule) if len(ratings) else [],
    }
