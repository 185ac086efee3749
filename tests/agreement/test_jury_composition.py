"""Jury composition: a single judge is the jury's one column; with three or more judges each
jury without one judge is built as the jury is and compared with the clinicians."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from agreement import analysis
from agreement.analysis.jury import jury_without
from agreement.stats import bootstrap_machine_vs_clinicians

CRITERIA = ("accuracy", "clarity")
BOOT = {"n_resamples": 80, "seed": 4}


def table_with_judges(judges: dict[str, float], weights: dict[str, float], n_items: int = 24):
    """Three clinicians and judges scoring latent + judge-specific noise; the jury is the
    judges' weighted mean, built here independently of the code under test."""
    rng = np.random.default_rng(9)
    latent = rng.normal(size=n_items)
    rows = []
    for i in range(n_items):
        attrs = ("m", "Bench", "Cat")
        for r in range(3):
            for c in CRITERIA:
                v = float(np.clip(np.round(3 + latent[i] + rng.normal(scale=0.6)), 1, 5))
                rows.append((i, c, f"C{r}", "clinician", v, *attrs))
        for c in CRITERIA:
            scores = {j: 3 + latent[i] + rng.normal(scale=noise) for j, noise in judges.items()}
            for j, v in scores.items():
                rows.append((i, c, j, "judge", v, *attrs))
            total = sum(weights[j] for j in judges)
            jury = sum(weights[j] * v for j, v in scores.items()) / total
            rows.append((i, c, "jury", "jury", jury, *attrs))
    cols = ["item", "criterion", "rater", "rater_kind", "value", "model", "benchmark", "category"]
    return pd.DataFrame(rows, columns=cols)


def test_a_single_judge_is_the_jury_column_not_a_second_one():
    table = table_with_judges({"solo": 0.5}, {"solo": 1.0})
    comp = analysis.comparison_table(table, **BOOT)
    columns = [c["column"] for c in comp.columns]
    assert "solo" not in columns and "jury" in columns
    jury_col = next(c for c in comp.columns if c["column"] == "jury")
    assert "solo" in jury_col["note"]
    assert "solo" not in set(comp.cells["column"])
    assert comp.jury["single_judge"] == "solo"
    assert [e["composition"] for e in comp.jury["compositions"]] == ["jury = solo alone"]


def test_two_judges_have_no_leave_one_out_jury_and_say_why():
    table = table_with_judges({"a": 0.3, "b": 1.5}, {"a": 1.0, "b": 1.0})
    comp = analysis.comparison_table(table, **BOOT)
    assert {"a", "b", "jury"} <= {c["column"] for c in comp.columns}
    assert not (comp.cells["section"] == "jury_composition").any()
    assert "other judge" in comp.jury["note"]
    assert {e["kind"] for e in comp.jury["compositions"]} == {"jury", "judge"}


def test_leave_one_judge_out_juries_are_weighted_means_of_the_others():
    judges = {"a": 0.2, "b": 0.8, "c": 2.5}
    weights = {"a": 2.0, "b": 1.0, "c": 1.0}
    table = table_with_judges(judges, weights)
    loo = jury_without(table, "a", weights)
    wide = table.loc[table["rater_kind"] == "judge"].pivot_table(
        index=["item", "criterion"], columns="rater", values="value"
    )
    expected = (wide["b"] * 1.0 + wide["c"] * 1.0) / 2.0
    got = loo.set_index(["item", "criterion"])["value"]
    np.testing.assert_allclose(got.loc[expected.index], expected, atol=1e-12)
    assert set(loo["rater_kind"]) == {"jury"} and set(loo["category"]) == {"Cat"}

    comp = analysis.comparison_table(table, judge_weights=weights, **BOOT)
    loo_cells = comp.cells.loc[comp.cells["section"] == "jury_composition"]
    assert list(loo_cells["column"]) == ["jury without a", "jury without b", "jury without c"]
    for j in judges:
        direct = bootstrap_machine_vs_clinicians(
            pd.concat([table, jury_without(table, j, weights)]),
            machine=f"jury without {j}",
            on_degenerate="drop",
            **BOOT,
        )
        row = loo_cells.set_index("column").loc[f"jury without {j}"]
        assert row["estimate"] == pytest.approx(direct.estimate, abs=1e-12)
        assert (row["ci_low"], row["ci_high"]) == pytest.approx((direct.ci_low, direct.ci_high))
    entries = comp.jury["compositions"]
    assert len(entries) == 1 + 3 + 3
    estimates = [e["estimate"] for e in entries]
    assert estimates == sorted(estimates, reverse=True)
    # The noisiest judge left out gives the best jury of two on this design.
    best_loo = next(e for e in entries if e["kind"] == "leave_one_out")
    assert best_loo["composition"] == "jury without c" and best_loo["judges"] == ["a", "b"]


def test_compositions_alone_compute_their_juries_as_the_report_does():
    """jury_compositions without precomputed leave-one-out cells (as a caller outside the
    report's row workers uses it) gives the report's compositions."""
    from agreement.analysis.jury import jury_compositions
    from agreement.analysis.settings import Settings

    weights = {"a": 2.0, "b": 1.0, "c": 1.0}
    table = table_with_judges({"a": 0.2, "b": 0.8, "c": 2.5}, weights)
    comp = analysis.comparison_table(table, judge_weights=weights, **BOOT)
    overall = comp.cells.loc[comp.cells["section"] == "overall"].to_dict("records")
    alone = jury_compositions(
        table, overall_cells=overall, weights=weights, s=Settings(**BOOT, confidence=0.95)
    )
    got = pd.DataFrame(alone.cells).set_index("column")["estimate"]
    expected = comp.cells.loc[comp.cells["section"] == "jury_composition"]
    assert got.to_dict() == pytest.approx(expected.set_index("column")["estimate"].to_dict())
