"""Item-bootstrap intervals for the MedHELM statistics (MedHELM gives no details; these
are ours). Study items are resampled with replacement and everything after the composite is
recomputed on each resample (``restandardize=True``: each rater's mean and SD from its items
as drawn, with multiplicity; ``False`` keeps the full-data z-scores). For the pairwise mean
the set of pairs is fixed by the full data; a pair counts in a resample when it has 2
distinct shared items drawn and a defined ICC (and, with an estimability rule, an ICC
inside its bounds: :mod:`agreement.stats.estimability`). All resamples are evaluated at once with
matrix products over item multiplicities (:mod:`agreement.stats.bootstrap`); BCa uses the
leave-one-item-out jackknife of the same statistic (above jackknife.JACKKNIFE_GROUPS items,
leave-one-group-out)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..bootstrap import (
    DEFAULT_MAX_CELLS,
    BootstrapResult,
    DifferenceStatistic,
    ItemStatistic,
    bootstrap_ci,
    bootstrap_named,
)
from ..estimability import EstimabilityRule
from .alpha import ALPHA_LEVELS, clinician_alpha_statistics, machine_alpha_statistics
from .fitted import FITTED_METHOD, FittedMachine, FittedMachineStatistic
from .form_choice import (
    CLINICIAN_FORMS,
    MACHINE_FITTED,
    MACHINE_FORMS,
    MACHINE_ZSCORED,
    ONEWAY,
    PAIRWISE,
    TWOWAY,
)
from .machine import MachineVsClinicianStatistic
from .oneway import ClinicianOneWayStatistic
from .pairwise import MEDHELM_MIN_SHARED_ITEMS, ClinicianPairwiseStatistic
from .twoway import ClinicianTwoWayStatistic


def bootstrap_machine_vs_clinicians(
    scores: pd.DataFrame,
    *,
    machine: object,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    method: str = "bca",
    seed: int | np.integer | np.random.Generator | None = None,
    restandardize: bool = True,
    on_degenerate: str = "raise",
    max_cells: int = DEFAULT_MAX_CELLS,
) -> BootstrapResult:
    """Item-bootstrap interval for :func:`machine_vs_clinicians` (see module docstring)."""
    stat = MachineVsClinicianStatistic(
        scores, machine=machine, restandardize=restandardize, on_degenerate=on_degenerate
    )
    return bootstrap_ci(
        stat,
        n_resamples=n_resamples,
        confidence=confidence,
        method=method,
        seed=seed,
        max_cells=max_cells,
    )


def bootstrap_clinician_pairwise(
    scores: pd.DataFrame,
    *,
    min_shared_items: int = MEDHELM_MIN_SHARED_ITEMS,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    method: str = "bca",
    seed: int | np.integer | np.random.Generator | None = None,
    restandardize: bool = True,
    on_degenerate: str = "raise",
    max_cells: int = DEFAULT_MAX_CELLS,
    rule: EstimabilityRule | None = None,
) -> BootstrapResult:
    """Item-bootstrap interval for :func:`clinician_pairwise` (see module docstring)."""
    stat = ClinicianPairwiseStatistic(
        scores,
        min_shared_items=min_shared_items,
        restandardize=restandardize,
        on_degenerate=on_degenerate,
        rule=rule,
    )
    return bootstrap_ci(
        stat,
        n_resamples=n_resamples,
        confidence=confidence,
        method=method,
        seed=seed,
        max_cells=max_cells,
    )


def bootstrap_machine_minus_clinicians(
    scores: pd.DataFrame,
    *,
    machine: object,
    clinician_form: str = PAIRWISE,
    machine_side: str = MACHINE_ZSCORED,
    min_shared_items: int = MEDHELM_MIN_SHARED_ITEMS,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    method: str = "bca",
    seed: int | np.integer | np.random.Generator | None = None,
    restandardize: bool = True,
    on_degenerate: str = "raise",
    max_cells: int = DEFAULT_MAX_CELLS,
    rule: EstimabilityRule | None = None,
) -> BootstrapResult:
    """Interval for (machine-vs-clinicians ICC) - (clinician-clinician ICC), both recomputed
    on the same item resamples. An interval above 0 means the machine agrees with the
    clinicians' consensus better than clinicians agree with each other (note the two are not
    the same kind of quantity: the first compares one rater with a *mean* of clinicians).

    ``clinician_form`` and ``machine_side`` (:mod:`.form_choice`) say what the terms are:

    - PAIRWISE: the machine's ICC(3,2) on z-scores minus MedHELM's pair mean (with a
      ``rule``, the rule's mean: pairs left out as it says; ``min_shared_items`` and
      ``restandardize`` apply to this form only);
    - ONEWAY: the machine's ICC(3,2) on z-scores minus the one-way ICC(1,2) on z-scores;
    - TWOWAY: the machine's ICC(3,2) on z-scores minus the two-way ICC(C,2); with
      ``machine_side=MACHINE_FITTED`` both terms from the two-way fit with the clinicians'
      offsets fitted, refitted on every resample (:mod:`.fitted`)."""
    return bootstrap_ci(
        machine_minus_clinicians_statistic(
            scores,
            machine=machine,
            clinician_form=clinician_form,
            machine_side=machine_side,
            min_shared_items=min_shared_items,
            restandardize=restandardize,
            on_degenerate=on_degenerate,
            rule=rule,
        ),
        n_resamples=n_resamples,
        confidence=confidence,
        method=method,
        seed=seed,
        max_cells=max_cells,
    )


def machine_minus_clinicians_statistic(
    scores: pd.DataFrame,
    *,
    machine: object,
    clinician_form: str = PAIRWISE,
    machine_side: str = MACHINE_ZSCORED,
    min_shared_items: int = MEDHELM_MIN_SHARED_ITEMS,
    restandardize: bool = True,
    on_degenerate: str = "raise",
    rule: EstimabilityRule | None = None,
) -> DifferenceStatistic:
    """The statistic :func:`bootstrap_machine_minus_clinicians` bootstraps (its arguments)."""
    if machine_side not in MACHINE_FORMS:
        raise ValueError(
            f"machine_side must be one of {sorted(MACHINE_FORMS)}, got {machine_side!r}"
        )
    if machine_side == MACHINE_FITTED and clinician_form != TWOWAY:
        raise ValueError(
            f"the fitted machine side goes with the two-way clinician form {TWOWAY!r}, "
            f"got {clinician_form!r}"
        )
    if machine_side == MACHINE_FITTED:
        core = FittedMachine(scores, machine=machine, on_degenerate=on_degenerate)
        first: ItemStatistic = FittedMachineStatistic(core, "icc")
        second: ItemStatistic = FittedMachineStatistic(core, "clinicians")
    elif clinician_form == TWOWAY:
        first = MachineVsClinicianStatistic(scores, machine=machine, on_degenerate=on_degenerate)
        second = ClinicianTwoWayStatistic(scores, on_degenerate=on_degenerate)
    elif clinician_form == ONEWAY:
        first = MachineVsClinicianStatistic(scores, machine=machine, on_degenerate=on_degenerate)
        second = ClinicianOneWayStatistic(scores, on_degenerate=on_degenerate)
    elif clinician_form == PAIRWISE:
        first = MachineVsClinicianStatistic(
            scores, machine=machine, restandardize=restandardize, on_degenerate=on_degenerate
        )
        second = ClinicianPairwiseStatistic(
            scores,
            min_shared_items=min_shared_items,
            restandardize=restandardize,
            on_degenerate=on_degenerate,
            rule=rule,
        )
    else:
        raise ValueError(
            f"clinician_form must be one of {sorted(CLINICIAN_FORMS)}, got {clinician_form!r}"
        )
    return DifferenceStatistic(first, second)


def bootstrap_machine_fitted(
    scores: pd.DataFrame,
    *,
    machine: object,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    method: str = FITTED_METHOD,
    seed: int | np.integer | np.random.Generator | None = None,
    on_degenerate: str = "raise",
    max_cells: int = DEFAULT_MAX_CELLS,
) -> dict[str, BootstrapResult]:
    """The machine's ICC(3,2) and interval alpha against the clinicians with the clinicians'
    offsets fitted (:mod:`.fitted`; keys "icc", "alpha_interval"), on the same item
    resamples, the fit redone on each: what an incomplete design with the two-way clinician
    form gets instead of :func:`bootstrap_machine_with_alpha`."""
    return bootstrap_named(
        machine_fitted_statistics(scores, machine=machine, on_degenerate=on_degenerate),
        n_resamples=n_resamples,
        confidence=confidence,
        method=method,
        seed=seed,
        max_cells=max_cells,
    )


def machine_fitted_statistics(
    scores: pd.DataFrame, *, machine: object, on_degenerate: str = "raise"
) -> dict[str, ItemStatistic]:
    """The statistics :func:`bootstrap_machine_fitted` bootstraps, by key (one fit shared)."""
    core = FittedMachine(scores, machine=machine, on_degenerate=on_degenerate)
    return {key: FittedMachineStatistic(core, key) for key in ("icc", "alpha_interval")}


#: What :func:`bootstrap_machine_with_alpha` gives, by key.
MACHINE_RESULTS: tuple[str, ...] = ("icc", *(f"alpha_{lv}" for lv in ALPHA_LEVELS))


def bootstrap_machine_with_alpha(
    scores: pd.DataFrame,
    *,
    machine: object,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    method: str = "bca",
    seed: int | np.integer | np.random.Generator | None = None,
    restandardize: bool = True,
    on_degenerate: str = "raise",
    max_cells: int = DEFAULT_MAX_CELLS,
    results: tuple[str, ...] = MACHINE_RESULTS,
) -> dict[str, BootstrapResult]:
    """The machine's ICC(3,2) and its interval and ordinal alpha (keys "icc",
    "alpha_interval", "alpha_ordinal"), all on the same item resamples; the ICC's result is
    the one :func:`bootstrap_machine_vs_clinicians` gives with the same seed. ``results``
    (keys of MACHINE_RESULTS) says which to compute: each is the same whichever others are
    computed with it (one stream of resamples)."""
    return bootstrap_named(
        machine_with_alpha_statistics(
            scores,
            machine=machine,
            restandardize=restandardize,
            on_degenerate=on_degenerate,
            results=results,
        ),
        n_resamples=n_resamples,
        confidence=confidence,
        method=method,
        seed=seed,
        max_cells=max_cells,
    )


def machine_with_alpha_statistics(
    scores: pd.DataFrame,
    *,
    machine: object,
    restandardize: bool = True,
    on_degenerate: str = "raise",
    results: tuple[str, ...] = MACHINE_RESULTS,
) -> dict[str, ItemStatistic]:
    """The statistics :func:`bootstrap_machine_with_alpha` bootstraps, by key, in
    MACHINE_RESULTS' order."""
    unknown = set(results) - set(MACHINE_RESULTS)
    if unknown or not results:
        raise ValueError(f"results must be some of {MACHINE_RESULTS}, got {results!r}")
    base = MachineVsClinicianStatistic(
        scores, machine=machine, restandardize=restandardize, on_degenerate=on_degenerate
    )
    levels = tuple(lv for lv in ALPHA_LEVELS if f"alpha_{lv}" in results)
    named: dict[str, ItemStatistic] = {"icc": base}
    if levels:
        named.update({f"alpha_{a.level}": a for a in machine_alpha_statistics(base, levels=levels)})
    return {k: named[k] for k in MACHINE_RESULTS if k in results}


def bootstrap_clinician_alpha(
    scores: pd.DataFrame,
    *,
    n_resamples: int = 1000,
    confidence: float = 0.95,
    method: str = "bca",
    seed: int | np.integer | np.random.Generator | None = None,
    restandardize: bool = True,
    on_degenerate: str = "raise",
    max_cells: int = DEFAULT_MAX_CELLS,
) -> dict[str, BootstrapResult]:
    """Interval and ordinal alpha over every clinician's z-composites (keys "alpha_interval",
    "alpha_ordinal"), on the resamples :func:`bootstrap_clinician_pairwise` draws with the
    same seed (same study items, same stream)."""
    return bootstrap_named(
        clinician_alpha_named(scores, restandardize=restandardize, on_degenerate=on_degenerate),
        n_resamples=n_resamples,
        confidence=confidence,
        method=method,
        seed=seed,
        max_cells=max_cells,
    )


def clinician_alpha_named(
    scores: pd.DataFrame, *, restandardize: bool = True, on_degenerate: str = "raise"
) -> dict[str, ItemStatistic]:
    """The statistics :func:`bootstrap_clinician_alpha` bootstraps, by key."""
    stats = clinician_alpha_statistics(
        scores, restandardize=restandardize, on_degenerate=on_degenerate
    )
    return dict(zip((f"alpha_{lv}" for lv in ALPHA_LEVELS), stats, strict=True))
