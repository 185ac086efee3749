"""What the score table leaves out, counted so nothing is dropped silently: items with fewer
than 2 clinicians, raters with too few items, cannot-assess answers, missing values, invalid
judge scores, flagged judge verdicts (in or out of the table) and judge calls by status."""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any

import pandas as pd

from jury.models import JudgeCall

FAILED_STATUSES = JudgeCall.FAILED_STATUSES


def _short_items(table: pd.DataFrame, items: pd.DataFrame) -> list[dict[str, Any]]:
    """Items rated by fewer than 2 clinicians."""
    clin = table.loc[table["rater_kind"] == "clinician"]
    raters_per_item = clin.groupby("item")["rater"].nunique()
    per_item = items.set_index("item").assign(
        n_clinicians=raters_per_item.reindex(items["item"]).fillna(0).astype(int).to_numpy()
    )
    short = per_item.loc[per_item["n_clinicians"] < 2].reset_index()
    return [
        {
            "item": int(r.item),
            "external_id": r.external_id,
            "model": r.model,
            "n_clinicians": int(r.n_clinicians),
        }
        for r in short.itertuples()
    ]


def _raters_with_few_items(
    table: pd.DataFrame, rated: set, min_rater_items: int
) -> list[dict[str, Any]]:
    """Raters (any kind) with fewer than `min_rater_items` of the clinician-rated items."""
    on_rated = table.loc[table["item"].isin(rated)]
    rater_items = on_rated.groupby(["rater", "rater_kind"])["item"].nunique().reset_index()
    few = rater_items.loc[rater_items["item"] < min_rater_items]
    return [
        {"rater": r.rater, "rater_kind": r.rater_kind, "n_items": int(r.item)}
        for r in few.itertuples()
    ]


def _cannot_assess(cannot_assess: Counter[tuple[str, str]]) -> dict[str, Any]:
    by_criterion: Counter[str] = Counter()
    by_rater: Counter[str] = Counter()
    for (rater, key), n in cannot_assess.items():
        by_criterion[key] += n
        by_rater[rater] += n
    return {
        "total": sum(cannot_assess.values()),
        "by_criterion": dict(sorted(by_criterion.items())),
        "by_rater": dict(sorted(by_rater.items())),
    }


def _judge_calls(calls: pd.DataFrame) -> list[dict[str, Any]]:
    """Per judge: calls in all, failed, and by status."""
    by_judge: dict[str, Counter[str]] = defaultdict(Counter)
    for judge, status in zip(calls["judge"], calls["status"], strict=True):
        by_judge[judge][status] += 1
    return [
        {
            "judge": judge,
            "total": sum(counts.values()),
            "failed": sum(counts.get(s, 0) for s in FAILED_STATUSES),
            "by_status": dict(sorted(counts.items())),
        }
        for judge, counts in sorted(by_judge.items())
    ]


def coverage_of(
    *,
    table: pd.DataFrame,
    items: pd.DataFrame,
    calls: pd.DataFrame,
    cannot_assess: Counter[tuple[str, str]],
    missing: int,
    invalid: Counter[str],
    min_rater_items: int,
    flagged: Counter[str] | None = None,
    exclude_flagged: bool = False,
    attention_checks_excluded: int = 0,
    calibration_items_excluded: int = 0,
) -> dict[str, Any]:
    """The coverage section of a report, from the score table and what it left out."""
    rated = set(table.loc[table["rater_kind"] == "clinician", "item"].unique())
    jury_items = set(table.loc[table["rater_kind"] == "jury", "item"])
    items_short = _short_items(table, items)
    return {
        "n_items": len(items),
        "n_items_rated": len(rated),
        "min_rater_items": min_rater_items,
        "n_items_short": len(items_short),
        "items_short": items_short,
        "raters_few_items": _raters_with_few_items(table, rated, min_rater_items),
        "cannot_assess": _cannot_assess(cannot_assess),
        "missing_values": missing,
        "invalid_judge_scores": dict(sorted(invalid.items())),
        "flagged_verdicts": dict(sorted((flagged or Counter()).items())),
        "flagged_verdicts_excluded": exclude_flagged,
        "rated_items_without_jury": len(rated - jury_items),
        "judge_calls": _judge_calls(calls),
        # planted items with an obvious answer, left out of the table and of `n_items`
        "attention_checks_excluded": attention_checks_excluded,
        # items rated by every rater against a reference (calibration), likewise left out
        "calibration_items_excluded": calibration_items_excluded,
    }
