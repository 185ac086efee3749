"""What a comparison is computed with, and the names its statistics are reported under."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agreement.errors import AgreementError

ROW_ALL = "All items"
CLINICIAN_COLUMN = "clinician-clinician"
MACHINE_FORM = "ICC(3,k) k=2 on within-rater z-scored composites (MedHELM)"
PAIRWISE_FORM = "mean over clinician pairs of ICC(3,2) on within-rater z-scored composites"
PAIRWISE_RULE = (
    "every pair of clinicians sharing >= {n} items; ICC(3,2) on their z-scores over the "
    "shared items; plain unweighted mean over pairs (pairs with no variation left out)"
)
DIFFERENCE_FORM = "machine ICC(3,2) minus clinician-clinician mean ICC(3,2), same resamples"
CI_METHODS = {"bca": "bootstrap over items, BCa", "percentile": "bootstrap over items, percentile"}


@dataclass(frozen=True)
class Settings:
    """What a comparison is computed with (all recorded in a report's method)."""

    n_resamples: int = 1000
    seed: int = 0
    confidence: float = 0.95
    method: str = "bca"
    min_items: int = 3
    min_shared_items: int = 2

    def __post_init__(self) -> None:
        if self.method not in CI_METHODS:
            raise AgreementError(
                f"method must be one of {sorted(CI_METHODS)}, got {self.method!r}",
                field="ci_method",
            )
        if self.min_items < 2:
            raise AgreementError("min_items must be >= 2", field="min_items")

    def boot(self) -> dict[str, Any]:
        """The keyword arguments every bootstrap of the comparison takes."""
        return {
            "n_resamples": self.n_resamples,
            "confidence": self.confidence,
            "method": self.method,
            "seed": self.seed,
        }
