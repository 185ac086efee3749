"""Study analyses on constructed score tables where the answer is known, and against the
agreement.stats functions called directly on the same subsets."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from agreement import analysis
from agreement.errors import AgreementError
from agreement.stats import (
    clinician_pairwise,
    helm_win_rates,
    koo_li_interval_band,
)
from agreement.stats.medhelm import (
    MACHINE_FITTED,
    TWOWAY,
    bootstrap_machine_fitted,
    bootstrap_machine_minus_clinicians,
    choose_clinician_form,
    clinician_alpha_twoway,
    clinician_twoway,
    machine_vs_clinicians_fitted,
)

CRITERIA = ("accuracy", "completeness", "clarity")
BOOT = {"n_resamples": 200, "seed": 11, "confidence": 0.95}


def _rows(item, rater, kind, values, attrs):
    return [(item, c, rater, kind, float(v), *attrs) for c, v in zip(CRITERIA, values, strict=True)]


def make_table(
    *,
    n_items: int = 40,
    n_clinicians: int = 4,
    raters_per_item: int | None = None,
    clinician_noise: float = 0.0,
    seed: int = 0,
) -> tuple[pd.DataFrame, np.ndarray]:
    """Clinician r scores a_r + b_r * latent (+ noise); "jury" and judge "linear" are exact
    linear functions of the latent; judge "random" and metric "noise" are independent of it."""
    rng = np.random.default_rng(seed)
    latent = rng.normal(size=n_items)
    rows = []
    cats = ("Clinical Decision Support", "Medical Research Assistance", "Administration")
    for i in range(n_items):
        attrs = (f"model-{i % 3}", ("MedCalc", "MEDIQA")[i % 2], cats[i % 3])
        if raters_per_item is None:
            raters = range(n_clinicians)
        else:
            raters = rng.choice(n_clinicians, size=raters_per_item, replace=False)
        for r in raters:
            base = 1.0 + 0.3 * r + (1.0 + 0.5 * r) * latent[i]
            noise = rng.normal(scale=clinician_noise, size=3) if clinician_noise else np.zeros(3)
            rows += _rows(i, f"R{r + 1:02d}", "clinician", base + noise, attrs)
        rows += _rows(i, "jury", "jury", [3 + 0.7 * latent[i]] * 3, attrs)
        rows += _rows(i, "linear", "judge", [5 - 2 + 2 * latent[i]] * 3, attrs)
        rows += _rows(i, "random", "judge", rng.normal(size=3), attrs)
        rows.append((i, "overall", "noise", "metric", float(rng.uniform()), *attrs))
    table = pd.DataFrame(
        rows,
        columns=[
            "item",
            "criterion",
            "rater",
            "rater_kind",
            "value",
            "model",
            "benchmark",
            "category",
        ],
    )
    return table, latent


def cell(comparison, column, row=analysis.ROW_ALL, section="overall"):
    c = comparison.cells
    sel = c.loc[(c["section"] == section) & (c["row"] == row) & (c["column"] == column)]
    assert len(sel) == 1, (row, column)
    return sel.iloc[0]


def test_a_machine_linear_in_consistent_clinicians_has_icc_one():
    # Clinicians who differ only by a linear transform have identical z-scores, so their mean
    # z is the latent's z; a machine linear in the latent has the same z: ICC(3,2) = 1.
    table, _ = make_table(n_items=30)
    comp = analysis.comparison_table(table, **BOOT)
    for machine in ("jury", "linear"):
        c = cell(comp, machine)
        assert c["estimate"] == pytest.approx(1.0, abs=1e-12)
        assert c["status"] == "ok" and c["n_items"] == 30 and c["n_raters"] == 4
        assert c["band"] == "excellent" and c["point_band"] == "excellent"
    clin = cell(comp, analysis.CLINICIAN_COLUMN)
    assert clin["estimate"] == pytest.approx(1.0, abs=1e-12)
    assert clin["n_pairs"] == 6
    diff = comp.differences.set_index(["row", "column"]).loc[(analysis.ROW_ALL, "jury")]
    assert diff["estimate"] == pytest.approx(0.0, abs=1e-12)


def test_a_random_machine_is_near_zero():
    table, _ = make_table(n_items=240, n_clinicians=6, raters_per_item=2, clinician_noise=0.3)
    comp = analysis.comparison_table(table, **BOOT)
    for machine in ("random", "noise"):
        c = cell(comp, machine)
        assert abs(c["estimate"]) < 0.3
        assert c["ci_low"] < 0 < c["ci_high"]
        assert c["band"].startswith("poor")
    assert cell(comp, "jury")["estimate"] > 0.8


def test_rows_and_columns_have_medhelm_shape():
    table, _ = make_table(n_items=24, raters_per_item=2, n_clinicians=5, clinician_noise=0.5)
    comp = analysis.comparison_table(table, **BOOT)
    assert [c["column"] for c in comp.columns] == [
        "jury",
        "linear",
        "random",
        "noise",
        analysis.CLINICIAN_COLUMN,
    ]
    groups = [r["row_group"] for r in comp.rows]
    assert groups[0] == "all" and groups.count("category") == 3 and groups.count("benchmark") == 2
    assert comp.criteria == list(CRITERIA)
    assert set(comp.cells["section"]) == {"overall", "criterion"}
    assert len(comp.cells) == (len(comp.rows) + len(CRITERIA)) * len(comp.columns)
    assert list(comp.cells.columns) == analysis.CELL_COLUMNS
    # differences: the jury on every row, every machine on all items
    assert len(comp.differences) == len(comp.rows) + 3


def test_category_and_benchmark_rows_partition_the_items():
    table, _ = make_table(n_items=33, raters_per_item=2, n_clinicians=5, clinician_noise=0.5)
    subsets = analysis.row_subsets(table)
    all_items = set(subsets[0][2])
    for group in ("category", "benchmark"):
        parts = [set(items) for g, _, items in subsets if g == group]
        assert set().union(*parts) == all_items
        assert sum(len(p) for p in parts) == len(all_items)
    comp = analysis.comparison_table(table, **BOOT)
    c = comp.cells.loc[(comp.cells["section"] == "overall") & (comp.cells["column"] == "jury")]
    for group in ("category", "benchmark"):
        assert c.loc[c["row_group"] == group, "n_items"].sum() == 33


RULE = analysis.Settings().rule  # the estimability rule a default comparison applies


def assert_cell_as_ruled(got, direct, *, n_shared):
    """The cell is the stats function's result where the estimability rule lets that result
    through, and "not estimable" for exactly the rule's reasons where it does not."""
    verdict = RULE.check_cell(
        estimate=direct.estimate, ci_low=direct.ci_low, ci_high=direct.ci_high, n_shared=n_shared
    )
    if not verdict.estimable:
        assert got["status"] == "not_estimable" and pd.isna(got["estimate"])
        assert got["rule_codes"] == ",".join(verdict.codes)
        return False
    assert got["status"] == "ok"
    assert got["estimate"] == pytest.approx(direct.estimate, abs=1e-12)
    assert got["ci_low"] == pytest.approx(direct.ci_low, abs=1e-12)
    assert got["ci_high"] == pytest.approx(direct.ci_high, abs=1e-12)
    assert got["band"] == koo_li_interval_band(direct.ci_low, direct.ci_high)
    return True


def test_cells_equal_the_stats_functions_on_the_same_subset():
    table, _ = make_table(n_items=36, raters_per_item=2, n_clinicians=5, clinician_noise=0.7)
    comp = analysis.comparison_table(table, method="percentile", **BOOT)
    shown = {True: 0, False: 0}
    for _group, row, items in analysis.row_subsets(table):
        sub = table.loc[table["item"].isin(items)]
        for machine in ("jury", "random", "noise"):
            # an incomplete design with the two-way clinician form: the machine side has the
            # clinicians' offsets fitted (issue 21), percentile whatever the setting
            direct = bootstrap_machine_fitted(sub, machine=machine, on_degenerate="drop", **BOOT)
            point = machine_vs_clinicians_fitted(sub, machine=machine, on_degenerate="drop")
            got = cell(comp, machine, row=row)
            shown[assert_cell_as_ruled(got, direct["icc"], n_shared=point.n_items)] += 1
            assert got["ci_method"] == analysis.FITTED_CI_METHOD
            assert got["machine_form"] == MACHINE_FITTED
            # what the cell's interval mark is decided by (agreement.renderings.table2)
            assert got["ratings_per_clinician"] == point.ratings_per_clinician
        clin = sub.loc[sub["rater_kind"] == "clinician"]
        # 2 of 5 clinicians per item: the design gives the two-way form (issue 21)
        assert choose_clinician_form(clin).form == TWOWAY
        two = clinician_twoway(clin, on_degenerate="drop")
        direct = SimpleNamespace(estimate=two.icc, ci_low=two.ci_low, ci_high=two.ci_high)
        got = cell(comp, analysis.CLINICIAN_COLUMN, row=row)
        assert got["clinician_form"] == TWOWAY
        clinician_shown = assert_cell_as_ruled(got, direct, n_shared=None)
        shown[clinician_shown] += 1
        d = bootstrap_machine_minus_clinicians(
            sub,
            machine="jury",
            clinician_form=TWOWAY,
            machine_side=MACHINE_FITTED,
            method="percentile",
            on_degenerate="drop",
            **BOOT,
        )
        got = comp.differences.set_index(["row", "column"]).loc[(row, "jury")]
        if clinician_shown and cell(comp, "jury", row=row)["status"] == "ok":
            # the design reaches the differences table, so an incomplete design's mark does
            assert got["design"] == "incomplete"
            assert got["estimate"] == pytest.approx(d.estimate, abs=1e-12)
            assert (got["ci_low"], got["ci_high"]) == pytest.approx((d.ci_low, d.ci_high))
        else:
            assert got["status"] == "not_estimable" and pd.isna(got["estimate"])
    assert shown[True] and shown[False]  # both kinds occur on this design


def test_per_criterion_cells_and_metrics_against_each_criterion():
    table, _ = make_table(n_items=30, raters_per_item=2, n_clinicians=5, clinician_noise=0.7)
    comp = analysis.comparison_table(table, **BOOT)
    for criterion in CRITERIA:
        sub = table.loc[(table["criterion"] == criterion) | (table["rater_kind"] == "metric")]
        assert set(sub.loc[sub["rater"] == "noise", "criterion"]) == {"overall"}
        for machine in ("jury", "noise"):
            # 2 of 5 clinicians per item: offsets fitted (issue 21)
            direct = bootstrap_machine_fitted(sub, machine=machine, on_degenerate="drop", **BOOT)
            n = machine_vs_clinicians_fitted(sub, machine=machine, on_degenerate="drop").n_items
            got = cell(comp, machine, row=criterion, section="criterion")
            assert_cell_as_ruled(got, direct["icc"], n_shared=n)


def test_cells_with_too_little_data_say_why():
    table, _ = make_table(n_items=20, raters_per_item=2, n_clinicians=4, clinician_noise=0.5)
    # a tiny category of 2 items, and a judge that scored only 2 items
    table.loc[table["item"].isin([0, 1]), "category"] = "Tiny"
    table = table.loc[~((table["rater"] == "random") & (table["item"] > 1))]
    comp = analysis.comparison_table(table, **BOOT)
    tiny = cell(comp, "jury", row="Tiny")
    assert tiny["status"] == "insufficient" and pd.isna(tiny["estimate"])
    assert "fewer than 3 items" in tiny["reason"]
    assert "fewer than 3 items" in cell(comp, analysis.CLINICIAN_COLUMN, row="Tiny")["reason"]
    absent = cell(comp, "random", row="Administration")
    assert absent["status"] == "insufficient" and "no scores from random" in absent["reason"]
    diff = comp.differences.set_index(["row", "column"]).loc[("Tiny", "jury")]
    assert diff["status"] == "insufficient" and diff["reason"]


def test_bad_settings_are_a_user_error_naming_the_field():
    table, _ = make_table(n_items=6, raters_per_item=2, n_clinicians=3, clinician_noise=0.5)
    with pytest.raises(AgreementError) as exc:
        analysis.comparison_table(table, method="jackknife")
    assert exc.value.field == "ci_method"
    with pytest.raises(AgreementError) as exc:
        analysis.comparison_table(table, min_items=1)
    assert exc.value.field == "min_items"


def test_the_same_seed_gives_the_same_report():
    table, _ = make_table(n_items=24, raters_per_item=2, n_clinicians=5, clinician_noise=0.5)
    a = analysis.comparison_table(table, **BOOT)
    b = analysis.comparison_table(table, **BOOT)
    pd.testing.assert_frame_equal(a.cells, b.cells)
    c = analysis.comparison_table(table, **{**BOOT, "seed": 12})
    assert not np.allclose(
        a.cells["ci_low"].astype(float), c.cells["ci_low"].astype(float), equal_nan=True
    )


def _leader_table() -> pd.DataFrame:
    # jury composites per (benchmark, model): b1: m1 4, m2 3, m3 3; b2: m1 2, m2 5, m3 3
    jury = {"b1": {"m1": 4, "m2": 3, "m3": 3}, "b2": {"m1": 2, "m2": 5, "m3": 3}}
    rows, item = [], 0
    for bench, model, score in ((b, m, v) for b, row in jury.items() for m, v in row.items()):
        for _ in range(2):
            attrs = (model, bench, "Cat A" if bench == "b1" else "Cat B")
            rows += _rows(item, "jury", "jury", [score] * 3, attrs)
            rows += _rows(item, "R01", "clinician", [score + 1] * 3, attrs)
            rows += _rows(item, "R02", "clinician", [score - 1, score, score + 1], attrs)
            item += 1
    return pd.DataFrame(
        rows,
        columns=[
            "item",
            "criterion",
            "rater",
            "rater_kind",
            "value",
            "model",
            "benchmark",
            "category",
        ],
    )


def _calls() -> pd.DataFrame:
    base = {
        "judge": "gpt",
        "status": "ok",
        "price_input_per_mtok": 2.5,
        "price_output_per_mtok": 10.0,
        "max_output_tokens": 512,
    }
    columns = ("item", "model", "cached", "input_tokens", "output_tokens", "cost")
    calls = [
        (0, "m1", False, 1000.0, 200.0, 0.0045),
        (1, "m1", False, 3000.0, 100.0, 0.0085),
        # a cache hit costs nothing and is not counted; nor is a call without token usage
        (1, "m1", True, None, None, 0.0),
        (2, "m2", False, None, None, None),
    ]
    rows = [{**base, **dict(zip(columns, call, strict=True))} for call in calls]
    rows[-1]["status"] = "provider_error"
    return pd.DataFrame(rows)


def test_leaderboard_means_win_rates_and_costs():
    table = _leader_table()
    board = analysis.leaderboard(table, _calls())
    by_model = board.by_model.set_index("model")
    assert by_model.loc["m1", "jury_mean"] == pytest.approx(3.0)
    assert by_model.loc["m1", "clinician_mean"] == pytest.approx(3.5)  # (score+1 + score) / 2
    assert by_model.loc["m1", "n_items_jury"] == 4
    # HELM: b1 m1 1, m2 0.25, m3 0.25; b2 m1 0, m2 1, m3 0.5
    assert by_model.loc["m1", "win_rate_jury"] == pytest.approx(0.5)
    assert by_model.loc["m2", "win_rate_jury"] == pytest.approx(0.625)
    assert by_model.loc["m3", "win_rate_jury"] == pytest.approx(0.375)
    per = table.loc[table["rater"] == "jury"].groupby(["benchmark", "model"])["value"].mean()
    direct = helm_win_rates(per.rename("score").reset_index()).set_index("model")["win_rate"]
    for model, value in direct.items():
        assert by_model.loc[model, "win_rate_jury"] == pytest.approx(value)
    assert by_model.loc["m2", "win_rate_clinician"] == pytest.approx(0.625)
    assert list(board.by_model["model"]) == ["m2", "m1", "m3"]
    # billed: (0.0045 + 0.0085) / 2 items; estimate: input + 512 max output at list prices
    assert by_model.loc["m1", "cost_per_item"] == pytest.approx(0.0065)
    est = ((1000 + 3000) * 2.5 + 2 * 512 * 10) / 1e6 / 2
    assert by_model.loc["m1", "cost_estimate_per_item"] == pytest.approx(est)
    assert pd.isna(by_model.loc["m2", "cost_per_item"])
    judge = board.cost_by_judge.set_index("judge").loc["gpt"]
    assert (judge["n_calls"], judge["n_calls_costed"]) == (4, 2)
    cat = board.by_model_category.set_index(["model", "category"])
    assert cat.loc[("m2", "Cat B"), "jury_mean"] == pytest.approx(5.0)
    assert set(board.notes) >= {"cost_per_item", "cost_estimate_per_item", "win_rate"}


def test_leaderboard_without_calls_or_jury():
    table = _leader_table()
    table = table.loc[table["rater_kind"] != "jury"]
    empty_calls = _calls().iloc[0:0]
    board = analysis.leaderboard(table, empty_calls)
    assert board.by_model["jury_mean"].isna().all()
    assert board.by_model["win_rate_clinician"].notna().all()
    assert board.cost_by_judge.empty


def test_plot_data_has_items_and_pairs():
    table, _ = make_table(n_items=20, raters_per_item=2, n_clinicians=4, clinician_noise=0.5)
    data = analysis.plot_data(table)
    assert len(data["items"]) == 20
    assert {"clinician_mean", "jury", "clinician_z", "jury_z", "category"} <= set(data["items"][0])
    assert data["clinicians"] == ["R01", "R02", "R03", "R04"]
    assert data["pairs"] and {"rater_a", "rater_b", "n_shared", "icc"} <= set(data["pairs"][0])


def test_a_pair_with_no_variation_up_to_rounding_is_undefined():
    a = {1: (4, 5, 5), 2: (2, 3, 1), 3: (1, 4, 1)}
    b = {1: (4, 5, 1), 2: (4, 2, 5), 4: (5, 3, 3)}
    rows = [
        (item, c, rater, "clinician", float(v))
        for rater, ratings in (("A", a), ("B", b))
        for item, values in ratings.items()
        for c, v in zip(CRITERIA, values, strict=True)
    ]
    table = pd.DataFrame(rows, columns=["item", "criterion", "rater", "rater_kind", "value"])
    try:
        result = clinician_pairwise(table)
    except ValueError:
        return  # fixed: the only pair is undefined, so there is no mean
    assert abs(result.mean_icc) <= 1.0e6, result.mean_icc


def test_every_cell_has_alpha_equal_to_the_package_on_its_z_scores():
    import krippendorff

    from agreement.stats import MachineVsClinicianStatistic

    table, _ = make_table(n_items=30, raters_per_item=3, n_clinicians=5, clinician_noise=0.7)
    comp = analysis.comparison_table(table, n_resamples=120, seed=3)
    assert set(analysis.ALPHA_COLUMNS) <= set(comp.cells.columns)
    for machine in ("jury", "random", "noise"):
        got = cell(comp, machine)
        icc_table = MachineVsClinicianStatistic(
            table, machine=machine, on_degenerate="drop"
        ).agreement.table
        data = icc_table[["clinician_z", "machine_z"]].to_numpy().T
        # 3 of 5 clinicians per item: interval alpha with the clinicians' offsets fitted
        # (issue 21); ordinal alpha stays on the z-scores
        fitted = machine_vs_clinicians_fitted(table, machine=machine, on_degenerate="drop")
        ordinal = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")
        for level, ref in (("interval", fitted.alpha_interval), ("ordinal", ordinal)):
            assert got[f"alpha_{level}"] == pytest.approx(ref, abs=1e-9)
            assert got[f"alpha_{level}_ci_low"] <= got[f"alpha_{level}"]
            assert got[f"alpha_{level}"] <= got[f"alpha_{level}_ci_high"]
    clin = table.loc[table["rater_kind"] == "clinician"]
    comp_ = clin.groupby(["rater", "item"])["value"].mean().unstack("item")
    z = comp_.sub(comp_.mean(axis=1), axis=0).div(comp_.std(axis=1, ddof=1), axis=0).to_numpy()
    got = cell(comp, analysis.CLINICIAN_COLUMN)
    two_way = clinician_alpha_twoway(clin, on_degenerate="drop")
    assert got["alpha_interval"] == pytest.approx(two_way.estimate, abs=1e-12)
    assert (got["alpha_interval_ci_low"], got["alpha_interval_ci_high"]) == pytest.approx(
        (two_way.ci_low, two_way.ci_high)
    )
    ref = krippendorff.alpha(reliability_data=z, level_of_measurement="ordinal")
    assert got["alpha_ordinal"] == pytest.approx(ref, abs=1e-9)


def test_cells_over_more_items_than_jackknife_groups_say_so(monkeypatch):
    """BCa's acceleration over more than JACKKNIFE_GROUPS items comes from groups of items;
    the cell's interval method says how many, the smaller rows' keep the plain text."""
    from agreement.stats import jackknife

    monkeypatch.setattr(jackknife, "JACKKNIFE_GROUPS", 30)
    table, _ = make_table(n_items=40)
    comp = analysis.comparison_table(table, n_resamples=60, seed=3, confidence=0.95)
    grouped = cell(comp, "jury")
    assert grouped["ci_method"] == (
        analysis.CI_METHODS["bca"] + " (acceleration from a jackknife over 30 groups of items)"
    )
    small_row = comp.cells.loc[(comp.cells["n_items"] < 30) & (comp.cells["column"] == "jury")]
    assert len(small_row) and (small_row["ci_method"] == analysis.CI_METHODS["bca"]).all()
    assert "random groups of items" in analysis.BCA_ACCELERATION
