"""The estimability rule in the pure statistics core: each reason, the clinician pairs it
leaves out of the mean (by their shared items, never by their value), the bootstrap that
follows it, and the guard that keeps Django out of agreement/stats."""

from __future__ import annotations

import ast
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pingouin as pg
import pytest

from agreement.stats import (
    MEDHELM_MIN_SHARED_ITEMS,
    OUT_OF_BOUNDS,
    TOO_FEW_SHARED,
    TOO_WIDE,
    ClinicianPairwiseStatistic,
    EstimabilityRule,
    NotEstimableError,
    bootstrap_clinician_pairwise,
    clinician_pairwise,
    composite_scores,
    icc_batch,
    zscore_within_rater,
)
from agreement.stats.estimability import number

from .factories import hand_case, medhelm_like_scores

STATS = Path(__file__).resolve().parents[3] / "agreement" / "stats"
OUTSIDE = ("django", "medhelm_site", "annotation", "jury", "delphi", "rest_framework")


def _imported_roots(path: Path) -> set[str]:
    roots = set()
    for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
            if node.module.split(".")[:2] == ["agreement", "stats"]:
                continue
            if node.module.startswith("agreement"):
                roots.add("agreement (outside stats)")
    return roots


def test_the_stats_core_imports_no_django_nor_any_app():
    files = sorted(STATS.rglob("*.py"))
    assert STATS / "estimability.py" in files
    bad = {
        str(f.relative_to(STATS)): sorted(
            r for r in _imported_roots(f) if r in OUTSIDE or r.startswith("agreement (")
        )
        for f in files
    }
    assert {f: roots for f, roots in bad.items() if roots} == {}
    # And at run time: importing the core loads none of them (also not through a dependency).
    code = (
        "import sys, agreement.stats; "
        f"print(sorted({{m.split('.')[0] for m in sys.modules}} & set({OUTSIDE!r})))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=STATS.parents[1],
        capture_output=True,
        text=True,
        check=True,
    )
    assert out.stdout.strip() == "[]"


RULE = EstimabilityRule(max_ci_width=1.0, min_shared_items=5)


def test_rule_parameters_are_checked():
    for bad in ({"max_ci_width": 0}, {"max_ci_width": 2.5}, {"max_ci_width": math.nan}):
        with pytest.raises(ValueError, match="max_ci_width"):
            EstimabilityRule(**{"min_shared_items": 2, **bad})
    for bad in (1, True):
        with pytest.raises(ValueError, match="min_shared_items"):
            EstimabilityRule(max_ci_width=1.0, min_shared_items=bad)
    with pytest.raises(ValueError, match="bounds"):
        EstimabilityRule(max_ci_width=1.0, min_shared_items=2, bounds=(1.0, -1.0))


def test_out_of_bounds():
    low = clinician_pairwise(hand_case()).mean_icc  # -55/27: a pair at -8 on 2 items
    assert low < -1
    v = RULE.check_cell(estimate=low, ci_low=-0.2, ci_high=0.6, n_shared=40)
    assert (v.codes, v.estimable) == ((OUT_OF_BOUNDS,), False)
    assert v.reason == f"ICC {number(low)} is outside [-1, 1]"
    for edge in (-1.0, 1.0, 1.0 + 1e-15):  # the bounds belong to them (up to rounding)
        assert RULE.check_cell(estimate=edge, ci_low=0.5, ci_high=1.0, n_shared=40).estimable


def test_interval_too_wide_or_missing():
    w = RULE.max_ci_width
    wide = RULE.check_cell(estimate=0.3, ci_low=0.2 - w, ci_high=0.2 + 0.01, n_shared=40)
    assert wide.codes == (TOO_WIDE,)
    assert "more than 1" in wide.reason and number(0.2 - w) in wide.reason
    just = RULE.check_cell(estimate=0.3, ci_low=-0.5, ci_high=-0.5 + w, n_shared=40)
    assert just.estimable  # as wide as stated is still estimable
    none = RULE.check_cell(estimate=0.3, ci_low=None, ci_high=None, n_shared=40, confidence=0.9)
    assert none.codes == (TOO_WIDE,) and none.reason.startswith("no 90% interval")


def test_too_few_shared_items_and_every_reason_at_once():
    m = RULE.min_shared_items
    few = RULE.check_cell(estimate=0.3, ci_low=0.1, ci_high=0.5, n_shared=m - 1)
    assert few.codes == (TOO_FEW_SHARED,)
    assert few.reason == f"rests on {m - 1} shared items, fewer than {m}"
    assert RULE.check_cell(estimate=0.3, ci_low=0.1, ci_high=0.5, n_shared=m).estimable
    # the clinician-clinician mean has its shared items tested per pair (n_shared None)
    assert RULE.check_cell(estimate=0.3, ci_low=0.1, ci_high=0.5, n_shared=None).estimable
    every = RULE.check_cell(estimate=-20.7, ci_low=-24568.0, ci_high=1.0, n_shared=2)
    assert every.codes == (OUT_OF_BOUNDS, TOO_WIDE, TOO_FEW_SHARED)
    assert every.reason.count("; ") == 2


def test_a_pair_is_kept_whatever_its_value_and_the_mean_is_medhelms():
    # The B-C pair of the hand case has ICC -8 on 2 shared items: still averaged (leaving it
    # out for its value would trim only the disagreeing side), so the mean stays -55/27.
    rule = EstimabilityRule(max_ci_width=1.0, min_shared_items=2)
    ruled = clinician_pairwise(hand_case(), rule=rule)
    plain = clinician_pairwise(hand_case())
    assert ruled.mean_icc == plain.mean_icc and ruled.n_pairs == 3
    assert ruled.n_pairs_excluded == 0 and ruled.excluded_text == ""
    assert ruled.pairs["excluded"].isna().all()
    assert not rule.check_cell(
        estimate=ruled.mean_icc, ci_low=0.0, ci_high=0.5, n_shared=None
    ).estimable


def test_every_pair_sharing_too_few_items_makes_the_mean_not_estimable():
    with pytest.raises(NotEstimableError) as exc:
        clinician_pairwise(hand_case(), rule=EstimabilityRule(max_ci_width=1, min_shared_items=3))
    assert exc.value.codes == (TOO_FEW_SHARED,) and exc.value.count == 3
    assert "no clinician pair shares 3 items or more" in str(exc.value)
    assert isinstance(exc.value, ValueError)  # a data problem, like every other one


def _pingouin_pair_icc(scores, a, b) -> float:
    """ICC(C,k) = ICC3k of pingouin on the two clinicians' z-scores over their shared items."""
    comp = composite_scores(scores)
    z = zscore_within_rater(comp.loc[comp["rater_kind"] == "clinician"])
    wide = z.pivot(index="item", columns="rater", values="z")[[a, b]].dropna()
    long = wide.reset_index().melt(id_vars="item", var_name="rater", value_name="z")
    table = pg.intraclass_corr(long, targets="item", raters="rater", ratings="z")
    row = table.iloc[5]  # by position, as tests/agreement/stats/test_icc.py reads pingouin 0.7
    assert row["Type"] == "ICC(C,k)"
    return float(row["ICC"])


def test_pairs_sharing_too_few_items_stay_out_of_the_mean_as_pingouin_computes_it():
    scores = medhelm_like_scores(np.random.default_rng(5), n_items=40, n_clinicians=6)
    pairs = clinician_pairwise(scores).pairs
    m = int(pairs["n_shared"].median()) + 1  # a stated minimum that leaves some pairs out
    rule = EstimabilityRule(max_ci_width=1.0, min_shared_items=m)
    ruled = clinician_pairwise(scores, rule=rule)
    kept = pairs.loc[pairs["n_shared"] >= m]
    assert 0 < len(kept) < len(pairs)
    expected = np.mean(
        [_pingouin_pair_icc(scores, a, b) for a, b in kept[["rater_a", "rater_b"]].values]
    )
    assert ruled.mean_icc == pytest.approx(expected, rel=1e-9)
    assert ruled.n_pairs == len(kept) and ruled.n_pairs_excluded == len(pairs) - len(kept)
    assert ruled.excluded_text == (
        f"{len(pairs) - len(kept)} of {len(pairs)} clinician pairs left out "
        f"(sharing fewer than {m} items)"
    )
    assert (ruled.pairs["excluded"] == TOO_FEW_SHARED).sum() == len(pairs) - len(kept)
    # the bootstrap averages the same pairs, in the data and in every resample
    stat = ClinicianPairwiseStatistic(scores, rule=rule)
    assert stat.from_weights(np.ones((1, stat.n_items)))[0] == pytest.approx(ruled.mean_icc)
    with_rule = bootstrap_clinician_pairwise(scores, rule=rule, n_resamples=200, seed=3)
    as_design = bootstrap_clinician_pairwise(scores, min_shared_items=m, n_resamples=200, seed=3)
    np.testing.assert_array_equal(with_rule.distribution, as_design.distribution)
    assert (with_rule.ci_low, with_rule.ci_high) == (as_design.ci_low, as_design.ci_high)


def test_leaving_pairs_out_by_value_would_manufacture_agreement():
    # Why the rule never leaves a pair out for its value (agreement.stats.estimability): two
    # independent raters on 2 shared items, true ICC 0. The mean of the pair ICC(3,2) values
    # inside [-1, 1] is 1 - (sqrt 2 - atan sqrt 2) / atan sqrt 2, as the docstring states.
    rng = np.random.default_rng(0)
    values = icc_batch(rng.normal(size=(200_000, MEDHELM_MIN_SHARED_ITEMS, 2)), "ICC(C,k)")
    inside = values[(values >= -1) & (values <= 1)]
    closed_form = 1 - (math.sqrt(2) - math.atan(math.sqrt(2))) / math.atan(math.sqrt(2))
    assert inside.mean() == pytest.approx(closed_form, abs=0.01)
    assert closed_form == pytest.approx(0.52, abs=0.005)
    assert abs(np.median(values)) < 0.01  # the pairs themselves centre on the truth


def test_the_rule_states_itself_with_its_values():
    text = RULE.describe(confidence=0.9)
    assert "outside [-1, 1]" in text and "90% interval is wider than 1" in text
    assert "fewer than 5 shared items" in text and "never left out for its value" in text
    record = RULE.as_record(confidence=0.9)
    assert record["applied"] is True and record["text"] == text
    assert (record["bounds"], record["max_ci_width"], record["min_shared_items"]) == (
        [-1.0, 1.0],
        1.0,
        5,
    )
