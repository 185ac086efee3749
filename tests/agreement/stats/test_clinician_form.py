"""The design decides the clinician-clinician form (issue 16): MedHELM's pair mean where
every clinician rated every item (or every pair shares enough items), the two-way ICC(C,2)
with fitted clinician offsets where each item is rated by some of many clinicians (issue 21;
tests/agreement/stats/test_icc_twoway_incomplete.py), the one-way ICC(1,2) on the same
z-scores (issue 16) on request. The one-way
estimate is checked against pingouin's one-way ANOVA on z-scores computed here with pandas
(1e-10), and against pingouin's ICC1 on a complete matrix."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pingouin as pg
import pytest

from agreement.stats.medhelm import (
    ONEWAY,
    PAIRWISE,
    TWOWAY,
    ClinicianOneWayStatistic,
    choose_clinician_form,
    clinician_oneway,
)
from agreement.stats.medhelm.form_choice import PAIRWISE_MIN_SHARED_ITEMS
from agreement.stats.simulation import Design, score_table, simulate_matrix


def _table(design: Design, seed: int) -> pd.DataFrame:
    x, _ = simulate_matrix(np.random.default_rng(seed), design)
    return score_table(x)


def test_a_complete_design_keeps_medhelm_pairs() -> None:
    choice = choose_clinician_form(_table(Design(40, 3, 3), seed=1))
    assert (choice.form, choice.design) == (PAIRWISE, "complete")


def test_few_of_many_clinicians_per_item_gets_the_two_way_form() -> None:
    choice = choose_clinician_form(_table(Design(200, 29, 2), seed=2))
    assert (choice.form, choice.design) == (TWOWAY, "incomplete")
    assert choice.min_shared_items < PAIRWISE_MIN_SHARED_ITEMS
    assert "two-way" in choice.reason


def test_a_form_asked_for_is_used_and_its_reason_says_what_the_design_gives() -> None:
    table = _table(Design(200, 29, 2), seed=2)
    asked = choose_clinician_form(table, asked=PAIRWISE)
    assert (asked.form, asked.design) == (PAIRWISE, "incomplete")
    assert asked.reason.startswith("asked for") and "two-way" in asked.reason
    # the one-way form of issue 16 stays available on request
    one = choose_clinician_form(table, asked=ONEWAY)
    assert one.form == ONEWAY and one.reason.startswith("asked for")
    # asking for the form the design gives changes nothing
    assert choose_clinician_form(table, asked=TWOWAY) == choose_clinician_form(table)
    with pytest.raises(ValueError, match="clinician form"):
        choose_clinician_form(table, asked="pairs")


def test_a_comparison_refuses_an_unknown_form_naming_the_field() -> None:
    from agreement.analysis.settings import Settings
    from agreement.errors import AgreementError

    with pytest.raises(AgreementError) as exc:
        Settings(clinician_form="pairs")
    assert exc.value.field == "clinician_form"


def test_an_incomplete_design_whose_pairs_share_enough_items_keeps_pairs() -> None:
    # 3 of 4 clinicians per item on 600 items: every pair shares about 300 items
    choice = choose_clinician_form(_table(Design(600, 4, 3), seed=3))
    assert choice.design == "incomplete"
    assert choice.min_shared_items >= PAIRWISE_MIN_SHARED_ITEMS
    assert choice.form == PAIRWISE


def _independent_oneway_icc2(table: pd.DataFrame) -> float:
    """ICC(1,2) from pingouin's one-way ANOVA on z-scores computed with pandas."""
    t = table.copy()
    g = t.groupby("rater")["value"]
    t["z"] = (t["value"] - g.transform("mean")) / g.transform("std")
    aov = pg.anova(data=t, dv="z", between="item", detailed=True)
    msb, msw = float(aov.loc[0, "MS"]), float(aov.loc[1, "MS"])
    n_i = t.groupby("item").size().to_numpy(dtype=float)
    big_n = n_i.sum()
    k0 = (big_n - (n_i**2).sum() / big_n) / (len(n_i) - 1)
    rho = (msb - msw) / (msb + (k0 - 1) * msw)
    return 2 * rho / (1 + rho)


def test_one_way_estimate_matches_an_independent_computation() -> None:
    table = _table(Design(200, 6, 2), seed=4)
    # some items with 3 ratings, so k0 is not an integer
    extra = _table(Design(30, 6, 3), seed=5)
    extra["item"] = "x" + extra["item"]
    table = pd.concat([table, extra], ignore_index=True)
    got = clinician_oneway(table)
    assert got.icc == pytest.approx(_independent_oneway_icc2(table), abs=1e-10)
    assert got.ci_low < got.icc < got.ci_high
    assert 2 < got.k0 < 3


def test_one_way_on_a_complete_matrix_equals_pingouin_icc1() -> None:
    table = _table(Design(50, 3, 3), seed=6)
    t = table.copy()
    g = t.groupby("rater")["value"]
    t["z"] = (t["value"] - g.transform("mean")) / g.transform("std")
    ref = pg.intraclass_corr(data=t, targets="item", raters="rater", ratings="z")
    icc1 = float(ref.set_index("Type").loc["ICC(1,1)", "ICC"])
    got = clinician_oneway(table)
    assert got.icc_single == pytest.approx(icc1, abs=1e-10)
    assert got.icc == pytest.approx(2 * icc1 / (1 + icc1), abs=1e-10)


def test_resampled_statistic_equals_the_estimate_on_the_resampled_table() -> None:
    table = _table(Design(60, 6, 2), seed=7)
    stat = ClinicianOneWayStatistic(table)
    assert stat.from_weights(np.ones((1, stat.n_items)))[0] == pytest.approx(stat.estimate())
    weights = np.random.default_rng(8).multinomial(stat.n_items, np.full(stat.n_items, 1 / 60))
    copies = []
    for item, w in zip(stat.items, weights, strict=True):
        rows = table.loc[table["item"] == item]
        copies += [rows.assign(item=f"{item}#{c}") for c in range(w)]
    direct = clinician_oneway(pd.concat(copies, ignore_index=True)).icc
    assert stat.from_weights(weights[None, :].astype(float))[0] == pytest.approx(direct, abs=1e-9)
