"""A row's cells computed as steps with one pass over the resamples (agreement.analysis.steps):
each cell gives exactly what it gives alone, and the clinicians' work per resample chunk is
done once for the whole row, however many machines the row has and however few chunks are
kept (at 30,000 items a row has more chunks than are kept: bench/README.md, issue 32)."""

from __future__ import annotations

from unittest import mock

import pytest

from agreement.analysis import comparison, machine_cell, machine_columns
from agreement.analysis.cells import clinician_cell, clinician_cell_steps, machine_cell_steps
from agreement.analysis.settings import Settings
from agreement.analysis.steps import run_cells
from agreement.stats.medhelm import fitted, machine
from agreement.stats.shared import shared_work
from tests.support.report_cells import table_of


@pytest.mark.parametrize("table_name", ["medhelm", "complete"])
def test_cells_computed_together_equal_the_cells_alone(table_name: str) -> None:
    table = table_of(table_name)
    s = Settings(n_resamples=60, seed=3)
    raters = [rater for _, rater in machine_columns(table)]
    together = run_cells(
        [*(machine_cell_steps(table, r, s) for r in raters), clinician_cell_steps(table, s)]
    )
    alone = [machine_cell(table, r, s) for r in raters] + [clinician_cell(table, s)]
    assert together == alone
    assert all(c["status"] == "ok" for c in together)


def test_a_cell_whose_data_allow_no_estimate_says_why_beside_the_others() -> None:
    table = table_of("complete")
    s = Settings(n_resamples=30, seed=3)
    flat = table.copy()
    flat.loc[flat["rater"] == "rouge_l_f1", "value"] = 0.5  # one composite for every item
    together = run_cells([machine_cell_steps(flat, r, s) for _, r in machine_columns(flat)])
    by_rater = dict(zip([r for _, r in machine_columns(flat)], together, strict=True))
    assert by_rater["rouge_l_f1"]["status"] == "insufficient"
    assert by_rater["rouge_l_f1"]["reason"] == machine_cell(flat, "rouge_l_f1", s)["reason"]
    assert all(c["status"] == "ok" for r, c in by_rater.items() if r != "rouge_l_f1")


def _clinician_work(table, machines, *, differences=()) -> int:
    """How many times the row's clinicians are fitted on resampled weights, with one chunk kept."""
    calls = 0
    original = fitted.fit_from_weights

    def counted(x, w):
        nonlocal calls
        calls += w.shape[0] > 1  # a resample chunk, not a point estimate
        return original(x, w)

    s = Settings(n_resamples=1000, seed=7)  # 3 chunks of 364 resamples over 180 items
    with (
        mock.patch.object(fitted, "fit_from_weights", counted),
        mock.patch.object(fitted, "CHUNKS_KEPT", 1),
        mock.patch.object(machine, "CHUNKS_KEPT", 1),
        shared_work(),
    ):
        comparison._row(
            table,
            section="overall",
            group="all",
            row="All items",
            machines=machines,
            s=s,
            differences=differences,
        )
    return calls


def test_the_clinicians_are_fitted_once_per_chunk_for_the_whole_row() -> None:
    table = table_of("medhelm")  # the fitted machine side: the clinicians' two-way fit
    machines = machine_columns(table)
    assert len(machines) >= 5
    one = _clinician_work(table, machines[:1])
    every = _clinician_work(table, machines, differences=tuple(machines))
    assert one == every == 3
