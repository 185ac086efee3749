"""Table 2's clinician-clinician cell and the differences take the form the design decides
(agreement.stats.medhelm.form_choice): a complete design keeps MedHELM's pair mean and its
numbers exactly; an incomplete design gets the two-way ICC(C,2) (the one-way ICC(1,2) on
request) and says so in the cell, the method and the table's notes."""

from __future__ import annotations

import numpy as np
import pytest

from agreement.analysis.cells import clinician_cell
from agreement.analysis.difference_cells import difference_cell
from agreement.analysis.settings import Settings
from agreement.renderings.table2 import form_note, table2
from agreement.stats import bootstrap_clinician_pairwise, clinician_pairwise
from agreement.stats.medhelm import (
    MACHINE_FITTED,
    MACHINE_ZSCORED,
    ONEWAY,
    PAIRWISE,
    TWOWAY,
    bootstrap_machine_minus_clinicians,
    clinician_oneway,
    clinician_twoway,
    machine_vs_clinicians,
    machine_vs_clinicians_fitted,
)
from agreement.stats.simulation import MACHINE, Design, score_table, simulate_matrix

SETTINGS = Settings(n_resamples=200, seed=3)


def _scores(design: Design, seed: int):
    x, machine = simulate_matrix(np.random.default_rng(seed), design)
    return score_table(x, machine)


def test_complete_design_keeps_medhelm_pair_mean_exactly() -> None:
    scores = _scores(Design(60, 3, 3), seed=11)
    got = clinician_cell(scores, SETTINGS)
    clin = scores.loc[scores["rater_kind"] == "clinician"]
    kw = {"min_shared_items": 2, "on_degenerate": "drop", "rule": SETTINGS.rule}
    boot = bootstrap_clinician_pairwise(clin, **kw, **SETTINGS.boot())
    assert got["clinician_form"] == PAIRWISE
    assert got["design"] == "complete"
    assert got["estimate"] == clinician_pairwise(clin, **kw).mean_icc
    assert (got["ci_low"], got["ci_high"]) == (boot.ci_low, boot.ci_high)
    assert "MedHELM" in got["statistic"]


def test_incomplete_design_gets_the_two_way_form_and_says_so() -> None:
    scores = _scores(Design(200, 29, 2), seed=12)
    got = clinician_cell(scores, SETTINGS)
    clin = scores.loc[scores["rater_kind"] == "clinician"]
    ref = clinician_twoway(clin, on_degenerate="drop")
    assert got["clinician_form"] == TWOWAY
    assert got["design"] == "incomplete"
    assert got["status"] == "ok"
    assert got["estimate"] == pytest.approx(ref.icc, abs=1e-12)
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((ref.ci_low, ref.ci_high))
    assert "two-way" in got["statistic"] and "two-way" in got["form_reason"]
    assert "Wald" in got["ci_method"]
    assert got.get("n_pairs") is None  # no pairs averaged
    assert got["alpha_interval"] is not None  # alpha beside it, as in every cell


def test_the_one_way_form_on_request() -> None:
    scores = _scores(Design(200, 29, 2), seed=12)
    got = clinician_cell(scores, Settings(n_resamples=200, seed=3, clinician_form=ONEWAY))
    ref = clinician_oneway(scores.loc[scores["rater_kind"] == "clinician"], on_degenerate="drop")
    assert got["clinician_form"] == ONEWAY and "one-way" in got["statistic"]
    assert got["estimate"] == pytest.approx(ref.icc, abs=1e-12)
    assert (got["ci_low"], got["ci_high"]) == pytest.approx((ref.ci_low, ref.ci_high))


def test_difference_on_incomplete_design_uses_the_two_way_term_with_fitted_offsets() -> None:
    # issue 21: both terms from the two-way fit (the machine side with the clinicians'
    # offsets fitted), percentile whatever the setting
    scores = _scores(Design(150, 6, 2), seed=13)
    got = difference_cell(scores, MACHINE, SETTINGS)
    clin = scores.loc[scores["rater_kind"] == "clinician"]
    fitted = machine_vs_clinicians_fitted(scores, machine=MACHINE, on_degenerate="drop")
    assert got["clinician_form"] == TWOWAY and got["machine_form"] == MACHINE_FITTED
    assert got["design"] == "incomplete"
    assert fitted.clinicians == pytest.approx(clinician_twoway(clin).icc, abs=1e-12)
    assert got["estimate"] == pytest.approx(fitted.icc - fitted.clinicians, abs=1e-12)
    boot = bootstrap_machine_minus_clinicians(
        scores,
        machine=MACHINE,
        clinician_form=TWOWAY,
        machine_side=MACHINE_FITTED,
        on_degenerate="drop",
        **{**SETTINGS.boot(), "method": "percentile"},
    )
    assert (got["ci_low"], got["ci_high"]) == (boot.ci_low, boot.ci_high)


def test_difference_on_incomplete_design_uses_the_one_way_term() -> None:
    scores = _scores(Design(150, 6, 2), seed=13)
    got = difference_cell(scores, MACHINE, SETTINGS, clinician_form=ONEWAY)
    clin = scores.loc[scores["rater_kind"] == "clinician"]
    machine = machine_vs_clinicians(scores, machine=MACHINE, on_degenerate="drop").icc
    assert got["clinician_form"] == ONEWAY
    assert got["estimate"] == pytest.approx(machine - clinician_oneway(clin).icc, abs=1e-12)
    assert got["machine_form"] == MACHINE_ZSCORED  # the one-way form keeps MedHELM's machine
    boot = bootstrap_machine_minus_clinicians(
        scores, machine=MACHINE, clinician_form=ONEWAY, on_degenerate="drop", **SETTINGS.boot()
    )
    assert (got["ci_low"], got["ci_high"]) == (boot.ci_low, boot.ci_high)


def test_table_notes_the_two_way_form_with_its_reason() -> None:
    scores = _scores(Design(200, 29, 2), seed=14)
    c = {
        **clinician_cell(scores, SETTINGS),
        "section": "overall",
        "row_group": "all",
        "row": "All items",
        "column": "clinician-clinician",
        "column_kind": "clinician",
    }
    note = form_note(c)
    assert note is not None and "two-way" in note and c["form_reason"] in note
    assert form_note({**c, "clinician_form": PAIRWISE}) is None
    method = {"intervals": SETTINGS.interval_record()}
    table = table2(
        {"columns": [{"column": c["column"], "column_kind": "clinician"}], "cells": [c]}, method
    )
    assert any(note in n for n in table.notes)
