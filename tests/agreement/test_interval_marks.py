"""Which Table 2 intervals are marked approximate: those on fewer items than the simulated
coverage was checked for, and those on an incomplete design (each item rated by some of the
clinicians), where bench/bench_coverage.py found the intervals short at 200 items too."""

from __future__ import annotations

import pandas as pd

from agreement.analysis.cells import clinician_design
from agreement.analysis.settings import Settings
from agreement.renderings.table2 import approximate_note, table2
from agreement.stats.medhelm import MACHINE_FITTED, MACHINE_ZSCORED, ONEWAY, TWOWAY


def _scores(raters_of_item: dict[int, list[str]]) -> pd.DataFrame:
    rows = [
        {"item": item, "criterion": "accuracy", "rater": r, "rater_kind": "clinician", "value": 3}
        for item, raters in raters_of_item.items()
        for r in raters
    ]
    rows.append(
        {"item": 1, "criterion": "accuracy", "rater": "j", "rater_kind": "judge", "value": 2}
    )
    return pd.DataFrame(rows)


def test_the_design_is_complete_only_when_every_item_has_every_clinician():
    assert clinician_design(_scores({1: ["a", "b"], 2: ["a", "b"]})) == "complete"
    assert clinician_design(_scores({1: ["a", "b"], 2: ["b", "c"]})) == "incomplete"
    assert clinician_design(_scores({1: ["a", "b", "c"], 2: ["a", "b"]})) == "incomplete"


def _cell(n_items: int, design: str | None) -> dict:
    return {
        "section": "overall",
        "row_group": "all",
        "row": "All items",
        "column": "jury",
        "column_kind": "jury",
        "statistic": "ICC(3,2)",
        "status": "ok",
        "estimate": 0.5,
        "ci_low": 0.4,
        "ci_high": 0.6,
        "n_items": n_items,
        "design": design,
    }


def test_intervals_on_few_items_or_an_incomplete_design_are_marked():
    method = {"intervals": Settings().interval_record()}
    record = method["intervals"]
    below = record["approximate_below_items"]
    assert approximate_note(_cell(below - 1, "complete"), method) == record["approximate_note"]
    assert approximate_note(_cell(below, "complete"), method) is None
    assert (
        approximate_note(_cell(2 * below, "incomplete"), method)
        == record["approximate_incomplete_note"]
    )
    assert "incomplete design" in record["approximate_incomplete_note"]
    # a report computed before the design was recorded: only the item-count mark
    older = {"intervals": {k: v for k, v in record.items() if k != "approximate_incomplete_note"}}
    assert approximate_note(_cell(2 * below, "incomplete"), older) is None
    # the printed table carries the note on the cell
    table = table2(
        {
            "columns": [{"column": "jury", "column_kind": "jury"}],
            "cells": [_cell(500, "incomplete")],
        },
        method,
    )
    assert table.rows[0].cells[0].note == record["approximate_incomplete_note"]
    assert table.notes == [record["approximate_incomplete_note"]]


def test_the_two_way_clinician_cell_is_not_marked_on_an_incomplete_design():
    # issue 21: its interval covered within 1.5 points with 2 of 6 and 2 of 29 clinicians
    # per item (bench/README.md); the one-way form and the machine cells keep the mark.
    method = {"intervals": Settings().interval_record()}
    record = method["intervals"]
    below = record["approximate_below_items"]
    clinician = {**_cell(below, "incomplete"), "column": "clinician-clinician"}
    clinician["column_kind"] = "clinician"
    assert approximate_note({**clinician, "clinician_form": TWOWAY}, method) is None
    assert (
        approximate_note({**clinician, "clinician_form": ONEWAY}, method)
        == record["approximate_incomplete_note"]
    )
    assert (
        approximate_note({**clinician, "clinician_form": TWOWAY, "n_items": below - 1}, method)
        == record["approximate_note"]
    )
    assert (
        approximate_note({**_cell(below, "incomplete"), "clinician_form": TWOWAY}, method)
        == record["approximate_incomplete_note"]
    )


def test_machine_side_marks_follow_the_machine_forms_the_simulation_checked():
    # issue 21 (i21-machine): machine cells and differences whose machine side is in the
    # record's checked lists lose the incomplete-design mark from the checked item count on;
    # the z-scored side and reports recorded before the lists keep it.
    record = Settings().interval_record()
    below = record["approximate_below_items"]
    lists = ("incomplete_checked_machine_forms", "incomplete_checked_difference_forms")
    checked = {"intervals": {**record, **{k: [MACHINE_FITTED] for k in lists}}}
    dense = record["incomplete_machine_min_ratings_per_clinician"]
    fitted = {
        **_cell(below, "incomplete"),
        "machine_form": MACHINE_FITTED,
        "ratings_per_clinician": dense,
    }
    difference = {**fitted, "machine_icc": 0.7, "clinician_icc": 0.6, "clinician_form": TWOWAY}
    assert approximate_note(fitted, checked) is None
    assert approximate_note(difference, checked) is None
    zscored = {**fitted, "machine_form": MACHINE_ZSCORED}
    assert approximate_note(zscored, checked) == record["approximate_incomplete_note"]
    few = {**fitted, "n_items": below - 1}
    assert approximate_note(few, checked) == record["approximate_note"]
    older = {"intervals": {k: v for k, v in record.items() if k not in lists}}
    assert approximate_note(fitted, older) == record["approximate_incomplete_note"]
    assert approximate_note(difference, older) == record["approximate_incomplete_note"]


def test_a_fitted_machine_cell_is_marked_where_its_clinicians_rated_fewer_items_than_checked():
    # what the bench found (bench/README.md, issue 21): the fitted machine ICC(3,2) and
    # interval alpha covered within 1.5 points where the clinicians rated 13.8 items each or
    # more (2 of 29 on 200 items; 2 of 6), 97.3% with 6.9 each (2 of 29 on 100 items); the
    # fitted difference covered in every design simulated
    method = {"intervals": Settings().interval_record()}
    record = method["intervals"]
    least = record["incomplete_machine_min_ratings_per_clinician"]
    assert least == 2 * 200 / 29
    fitted = {**_cell(record["approximate_below_items"], "incomplete")}
    fitted["machine_form"] = MACHINE_FITTED
    sparse = {**fitted, "ratings_per_clinician": 2 * 100 / 29}
    assert approximate_note(sparse, method) == record["approximate_sparse_note"]
    assert "fewer than 13.8 items each" in record["approximate_sparse_note"]
    assert approximate_note({**fitted, "ratings_per_clinician": least}, method) is None
    assert approximate_note({**fitted, "ratings_per_clinician": 2 * 100 / 6}, method) is None
    # a cell that does not say how many items its clinicians rated keeps the general mark
    assert approximate_note(fitted, method) == record["approximate_incomplete_note"]
    difference = {**sparse, "machine_icc": 0.7, "clinician_icc": 0.6, "clinician_form": TWOWAY}
    assert approximate_note(difference, method) is None
    # the z-scored side was never checked on an incomplete design
    zscored = {**sparse, "ratings_per_clinician": 50.0, "machine_form": MACHINE_ZSCORED}
    assert approximate_note(zscored, method) == record["approximate_incomplete_note"]


def test_a_difference_on_a_complete_design_is_marked_below_200_items():
    # bench/README.md: with 2 clinicians rating every item the difference's interval covered
    # 93.3% at 100 items (1,600 studies) and 94.5% at 200; machine cells 94.1-94.2% at 100
    method = {"intervals": Settings().interval_record()}
    record = method["intervals"]
    least = record["difference_approximate_below_items"]
    assert least == 200 and "fewer than 200 items" in record["difference_approximate_note"]
    complete = {**_cell(150, "complete"), "machine_icc": 0.7, "clinician_icc": 0.6}
    assert approximate_note(complete, method) == record["difference_approximate_note"]
    assert approximate_note({**complete, "n_items": least}, method) is None
    assert approximate_note(_cell(150, "complete"), method) is None  # the machine cell
    incomplete = {**complete, "design": "incomplete", "machine_form": MACHINE_FITTED}
    assert approximate_note(incomplete, method) is None  # the fitted difference: checked
    few = {**complete, "n_items": record["approximate_below_items"] - 1}
    assert approximate_note(few, method) == record["approximate_note"]
    older = {"intervals": {k: v for k, v in record.items() if not k.startswith("difference_")}}
    assert approximate_note(complete, older) is None
