"""Per-round Delphi statistics on the 1-9 RAND/UCLA scale: the scale and its bands (scale),
item statistics (items), stability between rounds (stability) and how they are computed
(methods). Pure numpy/scipy; no Django import."""

from delphi.stats.items import (
    DEFAULT_MIN_GROUP_RATERS,
    IPRAS_ASYMMETRY_FACTOR,
    IPRAS_SYMMETRIC_IPR,
    ComprehensivenessSummary,
    ItemStatistics,
    WithheldStatistics,
    comprehensiveness_summary,
    group_item_statistics,
    item_statistics,
)
from delphi.stats.methods import (
    DEFAULT_QUANTILE_METHOD,
    QUANTILE_METHODS,
    WILCOXON_ZERO_METHODS,
    describe_quantile_method,
    describe_wilcoxon,
)
from delphi.stats.scale import (
    BAND_COLOURS,
    BANDS,
    COMPREHENSIVENESS_POINTS,
    FLOAT_TOLERANCE,
    HIGH_BAND,
    LOW_BAND,
    MID_BAND,
    SCALE_POINTS,
    band_of,
)
from delphi.stats.stability import RatingStability, quadratic_weighted_kappa, rating_stability

__all__ = [
    "BANDS",
    "BAND_COLOURS",
    "COMPREHENSIVENESS_POINTS",
    "DEFAULT_MIN_GROUP_RATERS",
    "DEFAULT_QUANTILE_METHOD",
    "FLOAT_TOLERANCE",
    "HIGH_BAND",
    "IPRAS_ASYMMETRY_FACTOR",
    "IPRAS_SYMMETRIC_IPR",
    "LOW_BAND",
    "MID_BAND",
    "QUANTILE_METHODS",
    "SCALE_POINTS",
    "WILCOXON_ZERO_METHODS",
    "ComprehensivenessSummary",
    "ItemStatistics",
    "RatingStability",
    "WithheldStatistics",
    "band_of",
    "comprehensiveness_summary",
    "describe_quantile_method",
    "describe_wilcoxon",
    "group_item_statistics",
    "item_statistics",
    "quadratic_weighted_kappa",
    "rating_stability",
]
