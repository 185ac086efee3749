"""The estimability rule in the comparison: a cell that cannot be estimated has no number,
interval or band but the reason; the differences and the clinician-clinician mean leave it
out and say how many pairs they left out; the headline figures come with and without it."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from agreement import analysis, plots
from agreement.errors import AgreementError
from agreement.stats import (
    OUT_OF_BOUNDS,
    TOO_FEW_SHARED,
    TOO_WIDE,
    clinician_pairwise,
    machine_vs_clinicians,
)
from agreement.stats.estimability import number
from agreement.stats.medhelm import PAIRWISE
from tests.agreement.stats.factories import hand_case, medhelm_like_scores, with_row_attrs

# The rule's machinery on MedHELM's pair mean: these hand-made designs are incomplete (pairs
# share 2 items), where the design would give the two-way form, so the pair mean is asked for.
BOOT = {"n_resamples": 200, "seed": 11, "clinician_form": PAIRWISE}


def _cell(comp, column, row=analysis.ROW_ALL, section="overall"):
    c = comp.cells
    sel = c.loc[(c["section"] == section) & (c["row"] == row) & (c["column"] == column)]
    assert len(sel) == 1, (row, column)
    return sel.iloc[0]


def _difference(comp, column="jury", row=analysis.ROW_ALL):
    return comp.differences.set_index(["row", "column"]).loc[(row, column)]


def _entry(comp, figure):
    return next(e for e in comp.sensitivity.entries if e["figure"] == figure)


def test_the_degenerate_clinician_mean_is_not_estimable_and_says_why():
    # Three clinicians whose pairs share 2 items each, one pair ordering them the other way:
    # the MedHELM mean of the pair ICCs is -55/27 (the demo shows the same thing at -20.7).
    table = with_row_attrs(hand_case())
    unruled = clinician_pairwise(hand_case()).mean_icc
    assert unruled < -1
    comp = analysis.comparison_table(table, **BOOT)
    clin = _cell(comp, analysis.CLINICIAN_COLUMN)
    assert clin["status"] == "not_estimable"
    assert pd.isna(clin["estimate"]) and pd.isna(clin["ci_low"]) and pd.isna(clin["ci_high"])
    assert clin["band"] == clin["point_band"] == analysis.NOT_ESTIMABLE
    assert f"ICC {number(unruled)} is outside [-1, 1]" in clin["reason"]
    assert OUT_OF_BOUNDS in clin["rule_codes"].split(",")
    assert clin["n_pairs"] == 3 and clin["n_items"] == 4  # the counts stay


def test_a_difference_with_a_term_that_is_not_estimable_is_not_estimable():
    comp = analysis.comparison_table(with_row_attrs(hand_case()), **BOOT)
    d = _difference(comp, "J")
    assert d["status"] == "not_estimable" and pd.isna(d["estimate"]) and pd.isna(d["ci_low"])
    assert f"{analysis.CLINICIAN_COLUMN} is not estimable: ICC" in d["reason"]
    assert OUT_OF_BOUNDS in d["rule_codes"]
    assert pd.isna(d["clinician_icc"])


def test_the_sensitivity_line_gives_the_headline_with_and_without_the_rule():
    table = with_row_attrs(hand_case())
    comp = analysis.comparison_table(table, **BOOT)
    unruled_clin = clinician_pairwise(hand_case()).mean_icc
    unruled_jury = machine_vs_clinicians(hand_case(), machine="J").icc
    clin = _entry(comp, analysis.CLINICIAN_COLUMN)
    assert clin["with_rule"] is None and clin["with_rule_status"] == "not_estimable"
    assert clin["without_rule"] == pytest.approx(unruled_clin, abs=1e-12)
    diff = _entry(comp, f"J minus {analysis.CLINICIAN_COLUMN}")
    assert diff["kind"] == "difference" and diff["with_rule_status"] == "not_estimable"
    assert diff["without_rule"] == pytest.approx(unruled_jury - unruled_clin, abs=1e-12)
    jury = _entry(comp, "J")
    assert jury["without_rule"] == pytest.approx(unruled_jury, abs=1e-12)
    line = comp.sensitivity.line
    assert line == analysis.sensitivity_line(comp.sensitivity.entries)
    assert f"{analysis.CLINICIAN_COLUMN} not estimable / {number(unruled_clin)}" in line
    assert f"J minus {analysis.CLINICIAN_COLUMN} not estimable / " in line
    assert analysis.WITHOUT_RULE in line


def _scores(seed=5, **kw):
    return with_row_attrs(medhelm_like_scores(np.random.default_rng(seed), **kw))


def test_an_interval_wider_than_stated_is_not_estimable():
    table = _scores(n_items=30, n_clinicians=4)
    free = analysis.comparison_table(table, max_ci_width=2.0, **BOOT)
    jury = _cell(free, "jury")
    assert jury["status"] == "ok"
    width = jury["ci_high"] - jury["ci_low"]
    narrow = analysis.comparison_table(table, max_ci_width=width * 0.99, **BOOT)
    cell = _cell(narrow, "jury")
    assert cell["status"] == "not_estimable" and cell["rule_codes"] == TOO_WIDE
    assert pd.isna(cell["estimate"]) and cell["band"] == analysis.NOT_ESTIMABLE
    assert f"({number(jury['ci_low'])}, {number(jury['ci_high'])})" in cell["reason"]
    assert f"more than {width * 0.99:g}" in cell["reason"]
    wide_enough = analysis.comparison_table(table, max_ci_width=width * 1.01, **BOOT)
    assert _cell(wide_enough, "jury")["estimate"] == jury["estimate"]


def test_too_few_shared_items_for_a_machine_and_for_every_clinician_pair():
    table = _scores(n_items=12, n_clinicians=4)
    free = analysis.comparison_table(table, max_ci_width=2.0, **BOOT)
    n = int(_cell(free, "jury")["n_items"])
    most = int(clinician_pairwise(table).pairs["n_shared"].max())
    comp = analysis.comparison_table(
        table, max_ci_width=2.0, min_shared_items=max(n, most) + 1, **BOOT
    )
    jury = _cell(comp, "jury")
    assert jury["status"] == "not_estimable" and jury["rule_codes"] == TOO_FEW_SHARED
    assert f"rests on {n} shared items, fewer than {max(n, most) + 1}" in jury["reason"]
    clin = _cell(comp, analysis.CLINICIAN_COLUMN)
    assert clin["status"] == "not_estimable" and clin["rule_codes"] == TOO_FEW_SHARED
    assert f"no clinician pair shares {max(n, most) + 1} items or more" in clin["reason"]
    assert clin["n_pairs_excluded"] == clinician_pairwise(table).n_pairs
    assert _difference(comp)["status"] == "not_estimable"


def test_pairs_left_out_stay_out_of_the_mean_and_the_difference_and_are_counted():
    table = _scores(n_items=40, n_clinicians=6)
    pairs = clinician_pairwise(table).pairs.dropna(subset=["icc"])
    m = int(pairs["n_shared"].median()) + 1
    left_out = int((pairs["n_shared"] < m).sum())
    assert 0 < left_out < len(pairs)
    comp = analysis.comparison_table(table, max_ci_width=2.0, min_shared_items=m, **BOOT)
    clin = _cell(comp, analysis.CLINICIAN_COLUMN)
    assert clin["status"] == "ok"
    assert clin["estimate"] == pytest.approx(
        pairs.loc[pairs["n_shared"] >= m, "icc"].mean(), abs=1e-12
    )
    assert (clin["n_pairs"], clin["n_pairs_excluded"]) == (len(pairs) - left_out, left_out)
    assert clin["pairs_excluded"] == (
        f"{left_out} of {len(pairs)} clinician pairs left out (sharing fewer than {m} items)"
    )
    d = _difference(comp)
    assert d["status"] == "ok" and d["n_pairs_excluded"] == left_out
    assert d["estimate"] == pytest.approx(_cell(comp, "jury")["estimate"] - clin["estimate"])
    assert d["clinician_icc"] == clin["estimate"]
    entry = _entry(comp, analysis.CLINICIAN_COLUMN)
    assert entry["with_rule"] == clin["estimate"] and entry["n_pairs_excluded"] == left_out
    assert entry["without_rule"] == pytest.approx(pairs["icc"].mean(), abs=1e-12)
    assert f"({left_out} pairs left out)" in comp.sensitivity.line


def test_the_rule_applies_to_every_section():
    table = _scores(n_items=20, n_clinicians=4)
    comp = analysis.comparison_table(table, max_ci_width=0.05, **BOOT)
    computed = comp.cells.loc[comp.cells["status"] != "insufficient"]
    assert set(computed["section"]) == {"overall", "criterion"}
    assert (computed["status"] == "not_estimable").all()
    assert computed["estimate"].isna().all() and computed["ci_low"].isna().all()
    assert (computed["band"] == analysis.NOT_ESTIMABLE).all()
    assert computed["reason"].str.contains("0.05").all()


def test_rule_settings_are_a_user_error_naming_the_field():
    table = _scores(n_items=8, n_clinicians=3)
    for bad in (0.0, 2.5):
        with pytest.raises(AgreementError) as exc:
            analysis.comparison_table(table, max_ci_width=bad)
        assert exc.value.field == "max_ci_width"
    with pytest.raises(AgreementError) as exc:
        analysis.comparison_table(table, min_shared_items=1)
    assert exc.value.field == "min_shared_items"


def test_plot_data_marks_the_pairs_the_rule_left_out():
    table = _scores(n_items=40, n_clinicians=6)
    pairs = clinician_pairwise(table).pairs
    m = int(pairs["n_shared"].median()) + 1
    rule = analysis.Settings(min_shared_items=m).rule
    data = analysis.plot_data(table, rule=rule)
    marked = {(p["rater_a"], p["rater_b"]) for p in data["pairs"] if p["excluded"]}
    assert marked == {
        (a, b) for a, b, n in pairs[["rater_a", "rater_b", "n_shared"]].values if n < m
    }


def test_the_plots_draw_no_number_for_what_is_not_estimable():
    table = _scores(n_items=40, n_clinicians=6)
    pairs = clinician_pairwise(table).pairs
    m = int(pairs["n_shared"].median()) + 1
    free = analysis.comparison_table(table, max_ci_width=2.0, **BOOT).cells
    widths = (free["ci_high"] - free["ci_low"]).loc[free["section"] == "overall"].dropna()
    comp = analysis.comparison_table(
        table, max_ci_width=float(widths.median()), min_shared_items=m, **BOOT
    )
    results = {
        "cells": comp.cells.astype(object).where(comp.cells.notna(), None).to_dict("records"),
        "columns": comp.columns,
        "plot_data": analysis.plot_data(table, rule=comp.settings.rule),
    }
    figures = {f["key"]: f for f in plots.svg_figures(results)}
    heatmap = figures["heatmap"]["svg"]
    assert heatmap.count(">n.e.<") == 2 * int((pairs["n_shared"] < m).sum())  # both halves
    assert "n.e.: not estimable, left out of the mean" in heatmap
    n = int((comp.cells["section"].eq("overall") & comp.cells["status"].eq("not_estimable")).sum())
    assert n and f"{n} cells not estimable, not drawn" in (figures["forest"]["svg"] or "")
