"""A long table of ratings factorised into item and rater codes, for the incomplete-design
estimators (absent ratings are what makes a design incomplete)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .common import examples, numeric_values, require_columns


@dataclass(frozen=True)
class Codes:
    """A long table factorised: sorted item and rater labels, each row's codes, values."""

    items: pd.Index
    raters: pd.Index
    item_codes: np.ndarray
    rater_codes: np.ndarray
    values: np.ndarray


def codes_from_long(
    table: pd.DataFrame, item: str, rater: str, value: str, *, allow_duplicates: bool = False
) -> Codes:
    """Factorised long table; rows with a missing value are dropped (absent ratings are what
    makes a design incomplete). Duplicate (item, rater) rows raise unless allowed."""
    require_columns(table, (item, rater, value))
    values = numeric_values(table[value], what=value)
    keep = ~np.isnan(values)
    if not keep.all():
        table = table.loc[keep]
        values = values[keep]
    if len(values) == 0:
        raise ValueError("no non-missing ratings")
    i_codes, items = pd.factorize(table[item], sort=True)
    r_codes, raters = pd.factorize(table[rater], sort=True)
    if (i_codes < 0).any() or (r_codes < 0).any():
        raise ValueError(f"columns {item!r} and {rater!r} must not have missing labels")
    if not allow_duplicates:
        flat = i_codes.astype(np.int64) * len(raters) + r_codes
        uniq, counts = np.unique(flat, return_counts=True)
        if counts.max() > 1:
            dup = uniq[counts > 1]
            where = [(items[c // len(raters)], raters[c % len(raters)]) for c in dup[:5]]
            raise ValueError(
                f"{dup.size} duplicate (item, rater) pair(s), e.g. {examples(where)}; "
                "aggregate them (e.g. the mean over criteria) first"
            )
    return Codes(pd.Index(items), pd.Index(raters), i_codes, r_codes, values)
