"""Pure statistics core of medhelm-studio (numpy / scipy / pandas only, no Django).

Modules
-------
- :mod:`.icc` - the six Shrout & Fleiss / McGraw & Wong ICC forms on a complete matrix, with
  F tests and intervals; long table -> matrix; vectorised batches.
- :mod:`.icc_incomplete` - incomplete designs: one-way ICC(1) with k0, REML crossed-model
  ICC(A,1)/ICC(C,1).
- :mod:`.alpha` - Krippendorff's alpha (interval in closed form, linear time).
- :mod:`.bootstrap` - item bootstrap (percentile, BCa), paired differences.
- :mod:`.medhelm` - MedHELM's agreement method on the long score table.
- :mod:`.bands` - Koo & Li (2016) labels.
- :mod:`.winrate` - HELM mean win rate.
"""

from ._common import package_versions
from .alpha import AlphaResult, interval_alpha, krippendorff_alpha
from .bands import koo_li_band, koo_li_bands, koo_li_interval_band
from .bootstrap import (
    BootstrapResult,
    DifferenceStatistic,
    IccStatistic,
    ItemStatistic,
    bootstrap_ci,
    bootstrap_difference,
    bootstrap_distribution,
    icc_bootstrap,
)
from .icc import (
    FORMS,
    SHROUT_FLEISS_NAMES,
    IccEstimate,
    IccTable,
    MeanSquares,
    canonical_form,
    icc,
    icc_batch,
    icc_batch_all,
    icc_from_long,
    icc_matrix_from_long,
    mean_squares,
)
from .icc_incomplete import (
    OneWayIcc,
    RemlIcc,
    VarianceComponents,
    icc_oneway_unbalanced,
    icc_reml,
    reml_crossed_components,
)
from .medhelm import (
    ClinicianPairwiseStatistic,
    MachineAgreement,
    MachineVsClinicianStatistic,
    PairwiseAgreement,
    bootstrap_clinician_pairwise,
    bootstrap_machine_minus_clinicians,
    bootstrap_machine_vs_clinicians,
    clinician_pairwise,
    composite_scores,
    machine_vs_clinicians,
    zscore_within_rater,
)
from .winrate import helm_win_rates, per_benchmark_win_rates

__all__ = [
    "FORMS",
    "SHROUT_FLEISS_NAMES",
    "AlphaResult",
    "BootstrapResult",
    "ClinicianPairwiseStatistic",
    "DifferenceStatistic",
    "IccEstimate",
    "IccStatistic",
    "IccTable",
    "ItemStatistic",
    "MachineAgreement",
    "MachineVsClinicianStatistic",
    "MeanSquares",
    "OneWayIcc",
    "PairwiseAgreement",
    "RemlIcc",
    "VarianceComponents",
    "bootstrap_ci",
    "bootstrap_clinician_pairwise",
    "bootstrap_difference",
    "bootstrap_distribution",
    "bootstrap_machine_minus_clinicians",
    "bootstrap_machine_vs_clinicians",
    "canonical_form",
    "clinician_pairwise",
    "composite_scores",
    "helm_win_rates",
    "icc",
    "icc_batch",
    "icc_batch_all",
    "icc_bootstrap",
    "icc_from_long",
    "icc_matrix_from_long",
    "icc_oneway_unbalanced",
    "icc_reml",
    "interval_alpha",
    "koo_li_band",
    "koo_li_bands",
    "koo_li_interval_band",
    "krippendorff_alpha",
    "machine_vs_clinicians",
    "mean_squares",
    "package_versions",
    "per_benchmark_win_rates",
    "reml_crossed_components",
    "zscore_within_rater",
]
