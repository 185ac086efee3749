"""A report's rows computed side by side (agreement.analysis.row_workers) give the very numbers
of one row after another, in the same order, and a row's error reaches the caller."""

from __future__ import annotations

from functools import partial

import pandas as pd
import pytest

from agreement import analysis
from agreement.analysis import row_workers
from tests.support.report_cells import JUDGE_WEIGHTS, table_of


def _comparison(threads: int) -> analysis.Comparison:
    progress: list[tuple[int, int]] = []
    out = analysis.comparison_table(
        table_of("medhelm"),
        n_resamples=40,
        seed=3,
        judge_weights=JUDGE_WEIGHTS,
        progress=lambda done, total: progress.append((done, total)),
        workers=threads,
    )
    assert progress[0][0] == 0 and progress[-1][0] == progress[-1][1]  # every cell counted
    assert [d for d, _ in progress] == sorted(d for d, _ in progress)
    return out


def test_rows_side_by_side_give_the_numbers_of_rows_one_after_another() -> None:
    serial = _comparison(1)
    parallel = _comparison(3)
    pd.testing.assert_frame_equal(parallel.cells, serial.cells)
    pd.testing.assert_frame_equal(parallel.differences, serial.differences)
    assert parallel.jury == serial.jury
    assert parallel.sensitivity == serial.sensitivity


def test_a_rows_error_is_raised_in_the_caller() -> None:
    broken = partial(int, "row bench-03")  # a task whose error is a ValueError naming the row
    with row_workers.rows_side_by_side(2) as submit, pytest.raises(ValueError, match="bench-03"):
        submit(broken).result()
    with row_workers.rows_side_by_side(1) as submit, pytest.raises(ValueError, match="bench-03"):
        submit(broken).result()
