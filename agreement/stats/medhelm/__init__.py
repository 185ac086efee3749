"""MedHELM's agreement method (Bedi et al., "MedHELM", arXiv 2505.23802 v2, 2025, Table 2
and its methods section) on the long score table
``item, criterion, rater, rater_kind (clinician | judge | jury | metric), value``:

1-3. composite per rater and item, study set (items rated by a clinician), z-scores within
     rater (:mod:`.composite`, :mod:`.study_set`); a rater with no SD raises, or with
     ``on_degenerate="drop"`` is left out and listed in ``dropped_raters``;
4.   machine vs clinicians, ICC(3,2) (:mod:`.machine`);
5.   clinician vs clinician, mean pairwise ICC(3,2) (:mod:`.pairwise`);
     Krippendorff's alpha beside both, on the same z-scores (:mod:`.alpha`);
     item-bootstrap intervals and differences (:mod:`.intervals`).

Step 5 and its intervals take an optional estimability rule
(:mod:`agreement.stats.estimability`): pairs it says are not estimable stay out of the mean.
"""

from .alpha import ALPHA_LEVELS, ClinicianAlphaStatistic, MachineAlphaStatistic
from .composite import DEGENERATE_POLICIES, composite_scores, zscore_within_rater
from .intervals import (
    bootstrap_clinician_alpha,
    bootstrap_clinician_pairwise,
    bootstrap_machine_minus_clinicians,
    bootstrap_machine_vs_clinicians,
    bootstrap_machine_with_alpha,
)
from .machine import MachineAgreement, MachineVsClinicianStatistic, machine_vs_clinicians
from .pairwise import (
    MEDHELM_MIN_SHARED_ITEMS,
    ClinicianPairwiseStatistic,
    PairwiseAgreement,
    clinician_pairwise,
)

__all__ = [
    "ALPHA_LEVELS",
    "DEGENERATE_POLICIES",
    "MEDHELM_MIN_SHARED_ITEMS",
    "ClinicianAlphaStatistic",
    "ClinicianPairwiseStatistic",
    "MachineAgreement",
    "MachineAlphaStatistic",
    "MachineVsClinicianStatistic",
    "PairwiseAgreement",
    "bootstrap_clinician_alpha",
    "bootstrap_clinician_pairwise",
    "bootstrap_machine_minus_clinicians",
    "bootstrap_machine_vs_clinicians",
    "bootstrap_machine_with_alpha",
    "clinician_pairwise",
    "composite_scores",
    "machine_vs_clinicians",
    "zscore_within_rater",
]
