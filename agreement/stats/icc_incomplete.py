"""ICC(A,1) and ICC(C,1) for incomplete designs (each item rated by some of many raters),
from the REML variance components of value ~ 1 + (1|item) + (1|rater) (:mod:`.reml`), as
R's ``psych::ICC`` does:

ICC(A,1) = s2_item / (s2_item + s2_rater + s2_e),  ICC(C,1) = s2_item / (s2_item + s2_e),
ICC(A,k) = s2_item / (s2_item + (s2_rater + s2_e) / k),  ICC(C,k) = s2_item / (s2_item + s2_e / k).

On complete balanced data with positive ANOVA components REML equals the ANOVA estimates,
so ICC(A,1) = ICC(2,1) and ICC(C,1) = ICC(3,1). The one-way ICC(1) with unequal numbers of
ratings per item is :mod:`.icc_oneway`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .reml import VarianceComponents, reml_crossed_components


@dataclass(frozen=True)
class RemlIcc:
    """ICCs from REML variance components (psych::ICC's lmer route)."""

    icc_a1: float  # ICC(A,1) = ICC(2,1)
    icc_c1: float  # ICC(C,1) = ICC(3,1)
    icc_ak: float  # ICC(A,k) for the stated k
    icc_ck: float  # ICC(C,k) for the stated k
    k: float
    components: VarianceComponents


def icc_reml(
    table: pd.DataFrame,
    *,
    item: str = "item",
    rater: str = "rater",
    value: str = "value",
    k: float | None = None,
) -> RemlIcc:
    """ICC(A,1), ICC(C,1) and their average-measure forms from REML variance components.

    ``k`` is the number of ratings averaged for the ICC(A,k)/ICC(C,k) forms; by default the
    mean number of ratings per item (psych::ICC instead uses the number of raters, i.e. the
    columns of its wide matrix, which overstates k in sparse designs - state k when reporting).
    """
    comp = reml_crossed_components(table, item=item, rater=rater, value=value)
    if k is None:
        k = comp.n_ratings / comp.n_items
    if k <= 0:
        raise ValueError("k must be positive")
    si, sr, se = comp.item, comp.rater, comp.residual
    with np.errstate(divide="ignore", invalid="ignore"):
        return RemlIcc(
            icc_a1=float(si / (si + sr + se)),
            icc_c1=float(si / (si + se)),
            icc_ak=float(si / (si + (sr + se) / k)),
            icc_ck=float(si / (si + se / k)),
            k=float(k),
            components=comp,
        )
