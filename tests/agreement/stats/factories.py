"""Data builders shared by the agreement.stats tests (plain functions, no fixtures needed)."""

from __future__ import annotations

import numpy as np
import pandas as pd

# Shrout & Fleiss (1979), Table 1: six targets rated by four judges.
SHROUT_FLEISS = np.array(
    [[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]],
    dtype=float,
)

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", section C: 4 coders
# (rows A-D) x 12 units, NaN = missing.
nan = np.nan
KRIPPENDORFF_2011 = np.array(
    [
        [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],  # coder A
        [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],  # coder B
        [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],  # coder C
        [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],  # coder D
    ]
)


def long_from_matrix(matrix: np.ndarray, *, drop_nan: bool = True) -> pd.DataFrame:
    """items x raters matrix -> long table (item, rater, value), rows shuffled deterministically."""
    n, k = matrix.shape
    df = pd.DataFrame(
        {
            "item": np.repeat([f"item{i:04d}" for i in range(n)], k),
            "rater": np.tile([f"rater{j:02d}" for j in range(k)], n),
            "value": matrix.ravel(),
        }
    )
    if drop_nan:
        df = df.loc[df["value"].notna()]
    return df.sample(frac=1.0, random_state=0).reset_index(drop=True)


def random_matrix(
    rng: np.random.Generator,
    n: int,
    k: int,
    *,
    likert: bool = False,
    item_sd: float = 1.0,
    rater_sd: float = 0.5,
) -> np.ndarray:
    """Items x raters ratings: item effect + rater effect + noise, optionally rounded to 1-5."""
    x = (
        rng.normal(size=(n, 1)) * item_sd
        + rng.normal(size=(1, k)) * rater_sd
        + rng.normal(size=(n, k))
    )
    if likert:
        x = np.clip(np.round(3 + x), 1, 5)
    return x


def medhelm_like_scores(
    rng: np.random.Generator,
    *,
    n_items: int = 56,
    n_clinicians: int = 8,
    per_item: tuple[int, int] = (2, 3),
) -> pd.DataFrame:
    """A long score table shaped like MedHELM's validation: each item rated by 2-3 of a few
    clinicians on 3 criteria (1-5), a jury (mean of judges, continuous), and ROUGE-L."""
    truth = rng.normal(size=n_items)
    criteria = ("accuracy", "completeness", "clarity")
    rows = []
    for i in range(n_items):
        item = f"item{i:03d}"
        chosen = rng.choice(
            n_clinicians, size=rng.integers(per_item[0], per_item[1] + 1), replace=False
        )
        for c in chosen:
            for crit in criteria:
                v = float(np.clip(np.round(3 + truth[i] + rng.normal() * 0.9), 1, 5))
                rows.append((item, crit, f"clin{c}", "clinician", v))
        for crit in criteria:
            rows.append((item, crit, "jury", "jury", 3 + 0.6 * truth[i] + rng.normal() * 0.6))
        rows.append(
            (item, "rouge_l", "rougeL", "metric", 0.3 + 0.03 * truth[i] + rng.normal() * 0.05)
        )
    return pd.DataFrame(rows, columns=["item", "criterion", "rater", "rater_kind", "value"])
