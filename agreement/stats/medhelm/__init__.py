"""MedHELM's agreement method (Bedi et al., "MedHELM", arXiv 2505.23802 v2, 2025, Table 2
and its methods section) on the long score table
``item, criterion, rater, rater_kind (clinician | judge | jury | metric), value``:

1-3. composite per rater and item, study set (items rated by a clinician), z-scores within
     rater (:mod:`.composite`, :mod:`.study_set`); a rater with no SD raises, or with
     ``on_degenerate="drop"`` is left out and listed in ``dropped_raters``;
4.   machine vs clinicians, ICC(3,2) (:mod:`.machine`); where the clinicians get the
     two-way form on an incomplete design, with their offsets fitted (:mod:`.fitted`);
5.   clinician vs clinician, mean pairwise ICC(3,2) (:mod:`.pairwise`) where the design
     allows it, else ICC(C,2) of the two-way model with the clinicians' offsets fitted
     (:mod:`.twoway`; the one-way ICC(1,2) on the z-scores, :mod:`.oneway`, on request):
     the rule is :func:`.form_choice.choose_clinician_form`;
     Krippendorff's alpha beside both, on the same z-scores (:mod:`.alpha`);
     item-bootstrap intervals and differences (:mod:`.intervals`).

Step 5 and its intervals take an optional estimability rule
(:mod:`agreement.stats.estimability`): pairs it says are not estimable stay out of the mean.
"""

from .alpha import ALPHA_LEVELS, ClinicianAlphaStatistic, MachineAlphaStatistic
from .composite import DEGENERATE_POLICIES, composite_scores, zscore_within_rater
from .fitted import (
    FITTED_METHOD,
    FITTED_QUANTITIES,
    ClinicianAlphaTwoWay,
    FittedMachine,
    FittedMachineAgreement,
    FittedMachineStatistic,
    clinician_alpha_twoway,
    machine_vs_clinicians_fitted,
)
from .form_choice import (
    ASKED_AGAINST_DESIGN,
    BY_DESIGN,
    CLINICIAN_FORMS,
    MACHINE_FITTED,
    MACHINE_FORMS,
    MACHINE_ZSCORED,
    ONEWAY,
    PAIRWISE,
    REQUESTABLE_FORMS,
    TWOWAY,
    FormChoice,
    choose_clinician_form,
    machine_form,
)
from .intervals import (
    MACHINE_RESULTS,
    bootstrap_clinician_alpha,
    bootstrap_clinician_pairwise,
    bootstrap_machine_fitted,
    bootstrap_machine_minus_clinicians,
    bootstrap_machine_vs_clinicians,
    bootstrap_machine_with_alpha,
    clinician_alpha_named,
    machine_fitted_statistics,
    machine_minus_clinicians_statistic,
    machine_with_alpha_statistics,
)
from .machine import MachineAgreement, MachineVsClinicianStatistic, machine_vs_clinicians
from .oneway import ClinicianOneWayStatistic, OneWayClinicianAgreement, clinician_oneway
from .pairwise import (
    MEDHELM_MIN_SHARED_ITEMS,
    ClinicianPairwiseStatistic,
    PairwiseAgreement,
    clinician_pairwise,
)
from .twoway import ClinicianTwoWayStatistic, TwoWayClinicianAgreement, clinician_twoway

__all__ = [
    "ALPHA_LEVELS",
    "ASKED_AGAINST_DESIGN",
    "BY_DESIGN",
    "CLINICIAN_FORMS",
    "DEGENERATE_POLICIES",
    "FITTED_METHOD",
    "FITTED_QUANTITIES",
    "MACHINE_FITTED",
    "MACHINE_FORMS",
    "MACHINE_RESULTS",
    "MACHINE_ZSCORED",
    "MEDHELM_MIN_SHARED_ITEMS",
    "ONEWAY",
    "PAIRWISE",
    "REQUESTABLE_FORMS",
    "TWOWAY",
    "ClinicianAlphaStatistic",
    "ClinicianAlphaTwoWay",
    "ClinicianOneWayStatistic",
    "ClinicianPairwiseStatistic",
    "ClinicianTwoWayStatistic",
    "FittedMachine",
    "FittedMachineAgreement",
    "FittedMachineStatistic",
    "FormChoice",
    "MachineAgreement",
    "MachineAlphaStatistic",
    "MachineVsClinicianStatistic",
    "OneWayClinicianAgreement",
    "PairwiseAgreement",
    "TwoWayClinicianAgreement",
    "bootstrap_clinician_alpha",
    "bootstrap_clinician_pairwise",
    "bootstrap_machine_fitted",
    "bootstrap_machine_minus_clinicians",
    "bootstrap_machine_vs_clinicians",
    "bootstrap_machine_with_alpha",
    "choose_clinician_form",
    "clinician_alpha_named",
    "clinician_alpha_twoway",
    "clinician_oneway",
    "clinician_pairwise",
    "clinician_twoway",
    "composite_scores",
    "machine_fitted_statistics",
    "machine_form",
    "machine_minus_clinicians_statistic",
    "machine_vs_clinicians",
    "machine_vs_clinicians_fitted",
    "machine_with_alpha_statistics",
    "zscore_within_rater",
]
