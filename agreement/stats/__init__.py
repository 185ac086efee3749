"""Pure statistics core of medhelm-studio (numpy / scipy / pandas only, no Django).

ICC on complete matrices (:mod:`.icc`, :mod:`.icc_forms`, :mod:`.icc_intervals`,
:mod:`.icc_batch`) and incomplete designs (:mod:`.icc_oneway`, :mod:`.icc_incomplete`,
:mod:`.reml`); the interval each ICC form is reported with (:mod:`.icc_interval_choice`);
simulated studies for checking coverage (:mod:`.simulation`); Krippendorff's alpha (:mod:`.alpha`, per resample :mod:`.alpha_batch`); the item bootstrap (:mod:`.bootstrap`);
MedHELM's method on the long score table (:mod:`.medhelm`); when an estimate is not
estimable (:mod:`.estimability`); Koo & Li bands (:mod:`.bands`); HELM mean win rate
(:mod:`.winrate`); sample sizes for a rating study (:mod:`.planning`) and the simulation of a
planned design through this code (:mod:`.planning_sim`).
"""

from .alpha import AlphaResult, interval_alpha, krippendorff_alpha, ordinal_alpha
from .alpha_batch import weighted_alpha, weighted_alphas
from .bands import koo_li_band, koo_li_bands, koo_li_interval_band
from .bootstrap import (
    BootstrapResult,
    DifferenceStatistic,
    ItemStatistic,
    bootstrap_ci,
    bootstrap_cis,
    bootstrap_difference,
    bootstrap_distribution,
)
from .common import package_versions
from .estimability import (
    BOUNDS,
    OUT_OF_BOUNDS,
    REASON_CODES,
    TOO_FEW_SHARED,
    TOO_WIDE,
    EstimabilityRule,
    NotEstimableError,
    Verdict,
)
from .icc import icc, icc_from_long, icc_matrix_from_long, mean_squares
from .icc_batch import icc_batch, icc_batch_all
from .icc_bootstrap import IccStatistic, icc_bootstrap
from .icc_forms import (
    FORMS,
    SHROUT_FLEISS_NAMES,
    IccEstimate,
    IccTable,
    MeanSquares,
    canonical_form,
)
from .icc_incomplete import RemlIcc, icc_reml
from .icc_interval_choice import FORM_INTERVAL, INTERVAL_METHODS, IccInterval, icc_interval
from .icc_oneway import OneWayIcc, icc_oneway_unbalanced
from .medhelm import (
    ALPHA_LEVELS,
    MEDHELM_MIN_SHARED_ITEMS,
    ClinicianAlphaStatistic,
    ClinicianPairwiseStatistic,
    MachineAgreement,
    MachineAlphaStatistic,
    MachineVsClinicianStatistic,
    PairwiseAgreement,
    bootstrap_clinician_alpha,
    bootstrap_clinician_pairwise,
    bootstrap_machine_minus_clinicians,
    bootstrap_machine_vs_clinicians,
    bootstrap_machine_with_alpha,
    clinician_pairwise,
    composite_scores,
    machine_vs_clinicians,
    zscore_within_rater,
)
from .reml import VarianceComponents, reml_crossed_components
from .winrate import helm_win_rates, per_benchmark_win_rates

__all__ = [
    "ALPHA_LEVELS",
    "BOUNDS",
    "FORMS",
    "FORM_INTERVAL",
    "INTERVAL_METHODS",
    "MEDHELM_MIN_SHARED_ITEMS",
    "OUT_OF_BOUNDS",
    "REASON_CODES",
    "SHROUT_FLEISS_NAMES",
    "TOO_FEW_SHARED",
    "TOO_WIDE",
    "AlphaResult",
    "BootstrapResult",
    "ClinicianAlphaStatistic",
    "ClinicianPairwiseStatistic",
    "DifferenceStatistic",
    "EstimabilityRule",
    "IccEstimate",
    "IccInterval",
    "IccStatistic",
    "IccTable",
    "ItemStatistic",
    "MachineAgreement",
    "MachineAlphaStatistic",
    "MachineVsClinicianStatistic",
    "MeanSquares",
    "NotEstimableError",
    "OneWayIcc",
    "PairwiseAgreement",
    "RemlIcc",
    "VarianceComponents",
    "Verdict",
    "bootstrap_ci",
    "bootstrap_cis",
    "bootstrap_clinician_alpha",
    "bootstrap_clinician_pairwise",
    "bootstrap_difference",
    "bootstrap_distribution",
    "bootstrap_machine_minus_clinicians",
    "bootstrap_machine_vs_clinicians",
    "bootstrap_machine_with_alpha",
    "canonical_form",
    "clinician_pairwise",
    "composite_scores",
    "helm_win_rates",
    "icc",
    "icc_batch",
    "icc_batch_all",
    "icc_bootstrap",
    "icc_from_long",
    "icc_interval",
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
    "ordinal_alpha",
    "package_versions",
    "per_benchmark_win_rates",
    "reml_crossed_components",
    "weighted_alpha",
    "weighted_alphas",
    "zscore_within_rater",
]
