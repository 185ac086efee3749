"""How a rater's calibration ratings compare with the reference: exact agreement, agreement
within one scale point, mean absolute and mean signed difference, and Cohen's (1968)
quadratic-weighted kappa against the reference when there are enough pairs.

Pure Python and numpy (no Django): the selectors feed it (value, reference) pairs of whole
scale points. Kappa needs one scale for all its pairs (a category is a scale point) and at
least MIN_KAPPA_PAIRS of them; otherwise, or when the expected disagreement is 0 (rater and
reference each used a single point), it is None rather than a number that means nothing.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass

import numpy as np

#: Pairs needed before a weighted kappa is given (below it one pair moves it by a lot).
MIN_KAPPA_PAIRS = 5


@dataclass(frozen=True)
class CalibrationPair:
    value: int  # the rater's
    reference: int
    scale_min: int
    scale_max: int


@dataclass(frozen=True)
class CalibrationAgreement:
    n: int  # pairs compared (a cannot-assess answer is no pair: counted apart)
    exact: float | None  # share of pairs where value == reference
    within_one: float | None  # share with |value - reference| <= 1
    mean_abs_diff: float | None  # in scale points
    mean_diff: float | None  # value - reference: > 0 the rater is more lenient
    weighted_kappa: float | None  # quadratic weights; see the module's docstring

    def as_dict(self) -> dict[str, float | int | None]:
        return asdict(self)


def quadratic_weighted_kappa(
    values: Sequence[int], references: Sequence[int], *, scale_min: int, scale_max: int
) -> float | None:
    """Cohen's weighted kappa with weights (i - j)^2 / (k - 1)^2 over the k scale points:
    1 - observed weighted disagreement / the disagreement expected from the two margins.
    None without pairs or when the expected disagreement is 0."""
    if len(values) != len(references):
        raise ValueError(f"{len(values)} values but {len(references)} references")
    if not values:
        return None
    k = scale_max - scale_min + 1
    if k < 2:
        raise ValueError(f"a scale needs two points or more, got {scale_min}-{scale_max}")
    a = np.asarray(values, dtype=int) - scale_min
    b = np.asarray(references, dtype=int) - scale_min
    if a.min() < 0 or b.min() < 0 or a.max() >= k or b.max() >= k:
        raise ValueError(f"a value lies outside the scale {scale_min}-{scale_max}")
    observed = np.zeros((k, k))
    np.add.at(observed, (a, b), 1.0)
    observed /= len(a)
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    points = np.arange(k)
    weights = (points[:, None] - points[None, :]) ** 2 / (k - 1) ** 2
    disagreement = float((weights * expected).sum())
    if disagreement == 0:
        return None
    return 1.0 - float((weights * observed).sum()) / disagreement


def calibration_agreement(pairs: Sequence[CalibrationPair]) -> CalibrationAgreement:
    """The agreement of one rater's values with the reference over ``pairs``."""
    if not pairs:
        return CalibrationAgreement(0, None, None, None, None, None)
    diff = np.array([p.value - p.reference for p in pairs], dtype=float)
    scales = {(p.scale_min, p.scale_max) for p in pairs}
    kappa = None
    if len(pairs) >= MIN_KAPPA_PAIRS and len(scales) == 1:
        ((low, high),) = scales
        kappa = quadratic_weighted_kappa(
            [p.value for p in pairs], [p.reference for p in pairs], scale_min=low, scale_max=high
        )
    return CalibrationAgreement(
        n=len(pairs),
        exact=float(np.mean(diff == 0)),
        within_one=float(np.mean(np.abs(diff) <= 1)),
        mean_abs_diff=float(np.mean(np.abs(diff))),
        mean_diff=float(np.mean(diff)),
        weighted_kappa=kappa,
    )
