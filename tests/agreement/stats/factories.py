"""Data builders shared by the agreement.stats tests (plain functions, no fixtures needed)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from agreement.stats import ItemStatistic

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


COLS = ["item", "criterion", "rater", "rater_kind", "value"]


def hand_case() -> pd.DataFrame:
    """Three clinicians A, B, C (criteria acc, cla) and a jury J (three criteria).

    Composites (mean over criteria):
      A: i1 (1+3)/2 = 2, i2 (3+3)/2 = 3, i3 (5+3)/2 = 4   mean 3, sd 1 -> z = -1, 0, 1
      B: i2 (1+1)/2 = 1, i3 (2+4)/2 = 3, i4 (5+5)/2 = 5   mean 3, sd 2 -> z = -1, 0, 1
      C: i1 (3+3)/2 = 3, i3 (4+4)/2 = 4, i4 (1+3)/2 = 2   mean 3, sd 1 -> z =  0, 1, -1
      J: i1 (9+10+11)/3 = 10, i2 20, i3 (28+31+31)/3 = 30, and i5 = 1000 (no clinician rated
         i5, so it is not a study item and does not enter J's mean and SD): z = -1, 0, 1.
    """
    clinicians = {  # rater: {item: (acc, cla)}
        "A": {"i1": (1, 3), "i2": (3, 3), "i3": (5, 3)},
        "B": {"i2": (1, 1), "i3": (2, 4), "i4": (5, 5)},
        "C": {"i1": (3, 3), "i3": (4, 4), "i4": (1, 3)},
    }
    jury = {"i1": (9, 10, 11), "i2": (20, 20, 20), "i3": (28, 31, 31), "i5": (1000,) * 3}
    rows = [
        (item, criterion, rater, "clinician", v)
        for rater, ratings in clinicians.items()
        for item, values in ratings.items()
        for criterion, v in zip(("acc", "cla"), values, strict=True)
    ]
    rows += [
        (item, criterion, "J", "jury", v)
        for item, values in jury.items()
        for criterion, v in zip(("acc", "com", "cla"), values, strict=True)
    ]
    return pd.DataFrame(rows, columns=COLS)


def with_row_attrs(scores: pd.DataFrame, *, category: str = "Cat", benchmark: str = "Bench"):
    """``scores`` with the columns the comparison's rows need (one model, category, benchmark)."""
    return scores.assign(model="model", benchmark=benchmark, category=category)


class MeanStatistic(ItemStatistic):
    """Mean of one value per item; uses the generic (weights 1 - e_i) jackknife."""

    name = "mean"

    def __init__(self, values: np.ndarray) -> None:
        super().__init__(range(len(values)))
        self.values = values

    def from_weights(self, weights: np.ndarray) -> np.ndarray:
        return weights @ self.values / weights.sum(axis=1)
