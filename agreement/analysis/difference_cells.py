"""The difference of a row's machine cell and its clinician-clinician cell: (machine ICC) -
(clinician-clinician ICC) on the same item resamples, the clinician term in the clinician
cell's form."""

from __future__ import annotations

from typing import Any

import pandas as pd

from agreement.analysis.cells import fitted_boot, only_clinicians_and, result_fields
from agreement.analysis.settings import Settings
from agreement.analysis.steps import CellSteps, run_cells
from agreement.stats import MEDHELM_MIN_SHARED_ITEMS
from agreement.stats.batch import Bootstraps
from agreement.stats.medhelm import (
    MACHINE_FITTED,
    choose_clinician_form,
    machine_form,
    machine_minus_clinicians_statistic,
)


def difference_cell(
    sub: pd.DataFrame, machine: str, s: Settings, *, clinician_form: str | None = None
) -> dict[str, Any]:
    """(machine ICC) - (clinician-clinician ICC) on the same item resamples, the second term
    in the clinician cell's form: the pair mean with the pairs the rule leaves out left out
    (see clinician_cell), or the two-way ICC(C,2) / one-way ICC(1,2)."""
    return run_cells([difference_steps(sub, machine, s, clinician_form=clinician_form)])[0]


def difference_steps(
    sub: pd.DataFrame, machine: str, s: Settings, *, clinician_form: str | None = None
) -> CellSteps[dict[str, Any]]:
    """:func:`difference_cell` as steps (agreement.analysis.steps)."""
    choice = choose_clinician_form(
        sub.loc[sub["rater_kind"] == "clinician"], asked=s.clinician_form
    )
    form = clinician_form or choice.form
    side = machine_form(form, choice.design)
    try:
        statistic = machine_minus_clinicians_statistic(
            only_clinicians_and(sub, machine),
            machine=machine,
            clinician_form=form,
            machine_side=side,
            min_shared_items=MEDHELM_MIN_SHARED_ITEMS,
            on_degenerate="drop",
            rule=s.rule,
        )
        arguments = fitted_boot(s) if side == MACHINE_FITTED else s.boot()
        boot = (yield (Bootstraps({"difference": statistic}, **arguments),))["difference"]
    except ValueError as exc:  # the data allow no estimate
        return {"status": "insufficient", "reason": str(exc), "clinician_form": form}
    return {**_difference_fields(boot, choice.design, form, s), "machine_form": side}


def _difference_fields(boot: Any, design: str, form: str, s: Settings) -> dict[str, Any]:
    fields = result_fields(boot, s)
    return {
        "estimate": boot.estimate,
        "ci_low": fields["ci_low"],
        "ci_high": fields["ci_high"],
        "n_items": boot.n_items,
        "n_valid_resamples": boot.n_valid,
        "status": "ok",
        "reason": fields["reason"],
        "design": design,
        "clinician_form": form,
    }
