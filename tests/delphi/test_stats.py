"""delphi.stats on small cases computed by hand (arithmetic in the comments).

Quantile notation: for type 7 ("linear") with n sorted values x[0..n-1], the p-quantile sits
at h = (n - 1) p and is x[floor h] + frac(h) (x[floor h + 1] - x[floor h]). For type 6
("weibull") h = (n + 1) p on 1-based positions x1..xn.
"""

import re
from pathlib import Path

import pytest
import scipy.stats

from delphi.stats import (
    DEFAULT_MIN_GROUP_RATERS,
    DEFAULT_QUANTILE_METHOD,
    ItemStatistics,
    WithheldStatistics,
    comprehensiveness_summary,
    describe_quantile_method,
    describe_wilcoxon,
    group_item_statistics,
    item_statistics,
    quadratic_weighted_kappa,
    rating_stability,
)

approx = pytest.approx


# --------------------------------------------------------------------------- item statistics


def test_item_statistics_with_unable_to_rate_answers():
    # 9 invited; 7 answered: 5 ratings and 2 "unable to rate"; 2 did not answer.
    stats = item_statistics([5, None, 7, 9, None, 7, 8], n_invited=9)
    assert (stats.n_invited, stats.n_rated, stats.n_unable) == (9, 5, 2)
    # sorted ratings 5 7 7 8 9; median = x[2] = 7
    assert stats.median == 7
    # mean = 36 / 5 = 7.2; deviations -2.2 -0.2 -0.2 0.8 1.8, squares 4.84 0.04 0.04 0.64 3.24
    # sum 8.8; sample variance 8.8 / 4 = 2.2; SD = sqrt(2.2) = 1.48324
    assert stats.mean == approx(7.2)
    assert stats.sd == approx(2.2**0.5)
    # type 7: Q1 h = 4 * 0.25 = 1 -> x[1] = 7; Q3 h = 3 -> x[3] = 8; IQR = 1
    assert (stats.q1, stats.q3, stats.iqr) == (approx(7), approx(8), approx(1))
    assert stats.counts == {1: 0, 2: 0, 3: 0, 4: 0, 5: 1, 6: 0, 7: 2, 8: 1, 9: 1}
    # bands over the 5 who rated (not the 7 who answered): 0/5, 1/5, 4/5
    assert (stats.pct_low, stats.pct_mid, stats.pct_high) == (0, 20, 80)
    # P30 h = 4 * 0.3 = 1.2 -> 7 + 0.2 * (7 - 7) = 7; P70 h = 2.8 -> 7 + 0.8 * (8 - 7) = 7.8
    # IPR = 0.8; AI = |5 - (7 + 7.8) / 2| = |5 - 7.4| = 2.4; IPRAS = 2.35 + 1.5 * 2.4 = 5.95
    assert (stats.p30, stats.p70) == (approx(7), approx(7.8))
    assert (stats.ipr, stats.ai, stats.ipras) == (approx(0.8), approx(2.4), approx(5.95))
    assert stats.disagreement is False
    assert stats.outcome == ""


def test_quantile_method_switch_changes_q1_q3_p30_p70_but_not_median():
    stats = item_statistics([5, None, 7, 9, None, 7, 8], n_invited=9, quantile_method="weibull")
    # type 6 on 5 7 7 8 9: Q1 h = 6 * 0.25 = 1.5 -> x1 + 0.5 (x2 - x1) = 5 + 0.5 * 2 = 6
    # Q3 h = 4.5 -> x4 + 0.5 (x5 - x4) = 8 + 0.5 = 8.5; IQR 2.5 (type 7 gave 7, 8, 1)
    assert (stats.q1, stats.q3, stats.iqr) == (approx(6), approx(8.5), approx(2.5))
    # P30 h = 1.8 -> 5 + 0.8 * 2 = 6.6; P70 h = 4.2 -> 8 + 0.2 * 1 = 8.2
    assert (stats.p30, stats.p70) == (approx(6.6), approx(8.2))
    assert stats.median == 7


def test_quantile_methods_on_one_to_eight():
    ratings = [1, 2, 3, 4, 5, 6, 7, 8]
    linear = item_statistics(ratings, n_invited=8)
    # type 7: Q1 h = 7 * 0.25 = 1.75 -> 2 + 0.75 = 2.75; Q3 h = 5.25 -> 6 + 0.25 = 6.25
    assert (linear.q1, linear.q3, linear.iqr) == (approx(2.75), approx(6.25), approx(3.5))
    weibull = item_statistics(ratings, n_invited=8, quantile_method="weibull")
    # type 6: Q1 h = 9 * 0.25 = 2.25 -> 2 + 0.25 = 2.25; Q3 h = 6.75 -> 6 + 0.75 = 6.75
    assert (weibull.q1, weibull.q3, weibull.iqr) == (approx(2.25), approx(6.75), approx(4.5))
    # median (4 + 5) / 2 = 4.5 either way
    assert linear.median == weibull.median == 4.5


def test_median_is_the_ordinary_median_whatever_the_quantile_method():
    # type 1 ("inverted_cdf") on 1 2 3 4: the smallest x with F(x) >= p, so Q1 = 1 (F = 0.25),
    # Q3 = 3 (F = 0.75), and its 0.5 quantile would be 2; the median is (2 + 3) / 2 = 2.5
    stats = item_statistics([1, 2, 3, 4], n_invited=4, quantile_method="inverted_cdf")
    assert (stats.q1, stats.q3) == (1, 3)
    assert stats.median == 2.5


def test_default_quantile_method_is_type_7_and_is_described():
    assert DEFAULT_QUANTILE_METHOD == "linear"
    assert "type 7" in describe_quantile_method()
    assert "type 6" in describe_quantile_method("weibull")
    with pytest.raises(ValueError, match="unknown quantile method 'type7'"):
        item_statistics([7], n_invited=1, quantile_method="type7")


def test_rand_ucla_ipr_just_below_ipras_is_no_disagreement():
    # sorted 1 1 4 4 4 4 7 8 8 8 (n = 10)
    stats = item_statistics([1, 1, 4, 4, 4, 4, 7, 8, 8, 8], n_invited=10)
    # P30 h = 9 * 0.3 = 2.7 -> x[2] + 0.7 (x[3] - x[2]) = 4 + 0.7 * 0 = 4
    # P70 h = 6.3 -> x[6] + 0.3 (x[7] - x[6]) = 7 + 0.3 * 1 = 7.3
    # IPR = 3.3; AI = |5 - 11.3 / 2| = 0.65; IPRAS = 2.35 + 1.5 * 0.65 = 3.325
    # 3.3 > 3.325 is false -> no disagreement (by 0.025)
    assert (stats.p30, stats.p70) == (approx(4), approx(7.3))
    assert (stats.ipr, stats.ai, stats.ipras) == (approx(3.3), approx(0.65), approx(3.325))
    assert stats.disagreement is False


def test_rand_ucla_ipr_just_above_ipras_is_disagreement():
    # sorted 1 1 4 4 4 4 7 9 9 9 (the three 8s of the case above become 9s)
    stats = item_statistics([9, 1, 4, 9, 4, 1, 4, 7, 9, 4], n_invited=10)
    # P30 = 4 as above; P70 h = 6.3 -> 7 + 0.3 * (9 - 7) = 7.6
    # IPR = 3.6; AI = |5 - 11.6 / 2| = 0.8; IPRAS = 2.35 + 1.5 * 0.8 = 3.55
    # 3.6 > 3.55 -> disagreement (by 0.05)
    assert (stats.p30, stats.p70) == (approx(4), approx(7.6))
    assert (stats.ipr, stats.ai, stats.ipras) == (approx(3.6), approx(0.8), approx(3.55))
    assert stats.disagreement is True


def test_rand_ucla_published_example():
    # BMJ Open 2012;2:e001431, Table 1: 15 panellists rate 4, 5, 6, 7 x5, 8 x5, 9 x2.
    # Published: median 7, P30 7, P70 8, IPR 1, AI 2.5, IPRAS 6.1 (= 2.35 + 1.5 * 2.5).
    # Type 7: P30 h = 14 * 0.3 = 4.2 -> x[4] = x[5] = 7; P70 h = 9.8 -> x[9] = x[10] = 8
    stats = item_statistics([4, 5, 6, *[7] * 5, *[8] * 5, 9, 9], n_invited=15)
    assert stats.median == 7
    assert (stats.p30, stats.p70, stats.ipr) == (approx(7), approx(8), approx(1))
    assert (stats.ai, stats.ipras) == (approx(2.5), approx(6.1))
    assert stats.disagreement is False


def test_no_ratings_gives_counts_and_nones():
    stats = item_statistics([None, None], n_invited=3)
    assert (stats.n_invited, stats.n_rated, stats.n_unable) == (3, 0, 2)
    assert stats.counts == dict.fromkeys(range(1, 10), 0)
    for name in ("median", "q1", "q3", "iqr", "mean", "sd", "pct_low", "pct_high", "ipr"):
        assert getattr(stats, name) is None, name
    assert stats.disagreement is None


def test_single_rating_has_no_sd():
    stats = item_statistics([8], n_invited=4)
    # ddof = 1 with n = 1 is 0 / 0: reported as None, not 0
    assert stats.sd is None
    assert (stats.median, stats.q1, stats.q3, stats.p30, stats.p70) == (8, 8, 8, 8, 8)
    assert stats.disagreement is False


@pytest.mark.parametrize(
    ("ratings", "n_invited", "message"),
    [
        ([7, 10], 2, "position 1 must be in 1..9, got 10"),
        ([0], 1, "position 0 must be in 1..9"),
        ([7.0], 1, "position 0 must be an int"),
        ([True], 1, "position 0 must be an int"),
        ([7, None, 8], 2, r"n_invited \(2\) is smaller than the number of answers"),
    ],
)
def test_item_statistics_rejects_bad_input(ratings, n_invited, message):
    with pytest.raises(ValueError, match=message):
        item_statistics(ratings, n_invited=n_invited)


def test_item_statistics_maps_one_to_one_onto_the_model_fields():
    # Read the model's fields from the source so this test needs no Django.
    source = (Path(__file__).parents[2] / "delphi" / "models" / "rounds.py").read_text()
    block = source.split("class RoundItemStatistics(")[1].split("\nclass ")[0]
    model_fields = set(re.findall(r"^    (\w+) = models\.", block, flags=re.MULTILINE))
    keys = {"round_item", "group", "computed_at"}
    fields = item_statistics([7, 8], n_invited=2).as_model_fields()
    assert set(fields) == model_fields - keys
    assert fields["counts"]["7"] == 1  # JSON object keys are strings


# --------------------------------------------------------------------------- groups


def test_group_with_fewer_than_5_raters_is_withheld():
    assert DEFAULT_MIN_GROUP_RATERS == 5
    by_group = group_item_statistics(
        {"clinicians": [7, 7, 8, 9, 9], "patients": [7, 8, 9, 9, None]},
        n_invited_by_group={"clinicians": 5, "patients": 6},
    )
    clinicians = by_group["clinicians"]
    assert isinstance(clinicians, ItemStatistics)
    # 7 7 8 9 9: median 8, mean 40 / 5 = 8, deviations -1 -1 0 1 1 -> variance 4 / 4, SD 1
    assert (clinicians.median, clinicians.mean, clinicians.sd) == (8, 8, 1)
    # 5 patients answered but only 4 rated: withheld, and no number leaks out
    patients = by_group["patients"]
    assert patients == WithheldStatistics(reason="withheld: fewer than 5 raters")
    assert not isinstance(patients, ItemStatistics)


def test_group_threshold_is_a_parameter():
    by_group = group_item_statistics(
        {"patients": [7, 8, 9, 9, None], "nurses": [7, 8, 9]},
        n_invited_by_group={"patients": 6, "nurses": 3},
        min_raters=4,
    )
    assert isinstance(by_group["patients"], ItemStatistics)
    assert by_group["patients"].n_rated == 4
    assert by_group["nurses"] == WithheldStatistics(reason="withheld: fewer than 4 raters")


def test_group_input_errors():
    with pytest.raises(ValueError, match="reserved for the whole panel"):
        group_item_statistics({"": [7] * 5}, n_invited_by_group={"": 5})
    with pytest.raises(ValueError, match="must name the same groups"):
        group_item_statistics({"a": [7] * 5}, n_invited_by_group={"b": 5})
    with pytest.raises(ValueError, match="min_raters must be an int >= 1"):
        group_item_statistics({"a": [7]}, n_invited_by_group={"a": 1}, min_raters=0)


# --------------------------------------------------------------------------- stability


def test_quadratic_weighted_kappa_by_hand_on_the_full_scale():
    before, after = [7, 8, 9, 5], [7, 7, 9, 7]
    # weights w_ij = (i - j)^2 / 8^2 on the scale values 1..9
    # observed: pairs (7,7) (8,7) (9,9) (5,7): sum w O = (0 + 1 + 0 + 4) / 64 / 4 = 5 / 256
    # marginals: before 5, 7, 8, 9 each 1/4; after 7: 3/4, 9: 1/4
    # chance: sum_i p_i sum_j q_j (i - j)^2, per before value
    #   5: 3/4 * 4 + 1/4 * 16 = 7;  7: 3/4 * 0 + 1/4 * 4 = 1
    #   8: 3/4 * 1 + 1/4 * 1 = 1;   9: 3/4 * 4 + 1/4 * 0 = 3
    #   sum w E = (7 + 1 + 1 + 3) / 4 / 64 = 3 / 64
    # kappa = 1 - (5/256) / (3/64) = 1 - 5/12 = 7/12 = 0.58333
    kappa = quadratic_weighted_kappa(before, after)
    assert kappa == approx(7 / 12)
    # With only the observed categories 5, 7, 8, 9 as ranks 0..3 (what sklearn does without
    # labels) 5 and 7 become one step apart: O = (0 + 1 + 0 + 1) / 4 = 0.5 units,
    # E = (4 + 4 + 12 + 12) / 16 = 2 units, kappa = 1 - 0.5 / 2 = 0.75. Not what we want.
    assert kappa != approx(0.75)


def test_stability_by_hand():
    previous = {"a": 7, "b": 8, "c": 9, "d": 5, "e": None, "f": 3}
    current = {"a": 7, "b": 7, "c": 9, "d": 7, "e": 6}
    # pairs: a b c d (e was unable to rate in round 1, f did not rate round 2)
    # changes: 0, -1, 0, +2 -> unchanged 2 / 4 = 50%; mean |change| = 3 / 4 = 0.75
    result = rating_stability(previous, current)
    assert result.n_paired == 4
    assert result.pct_unchanged == 50
    assert result.mean_abs_change == approx(0.75)
    assert result.weighted_kappa == approx(7 / 12)  # the hand case above
    expected = scipy.stats.wilcoxon([0, -1, 0, 2])
    assert result.wilcoxon_p == approx(expected.pvalue)
    assert result.wilcoxon_statistic == approx(expected.statistic)
    assert "cannot fall below 0.05" in result.wilcoxon_note


def test_stability_wilcoxon_matches_scipy():
    before = [5, 6, 6, 7, 7, 7, 8, 4]
    after = [7, 7, 8, 7, 8, 8, 8, 6]
    # changes +2 +1 +2 0 +1 +1 0 +2: 6 nonzero; |d| 1 1 1 ranked 1-3 (mean 2), 2 2 2 ranked
    # 4-6 (mean 5); all positive: W+ = 3 * 2 + 3 * 5 = 21, W- = 0, statistic = min = 0
    result = rating_stability(dict(enumerate(before)), dict(enumerate(after)))
    assert result.wilcoxon_statistic == 0
    assert result.wilcoxon_p == approx(scipy.stats.wilcoxon(before, after).pvalue)
    assert result.wilcoxon_note == ""
    assert result.pct_unchanged == 25  # 2 of 8
    assert result.mean_abs_change == approx(9 / 8)  # (2+1+2+0+1+1+0+2) / 8
    pratt = rating_stability(
        dict(enumerate(before)), dict(enumerate(after)), wilcoxon_zero_method="pratt"
    )
    assert pratt.wilcoxon_p == approx(
        scipy.stats.wilcoxon(before, after, zero_method="pratt").pvalue
    )
    assert "zero_method='pratt'" in describe_wilcoxon("pratt")


def test_stability_when_nobody_changed():
    # all differences zero: scipy has nothing to rank; documented result p = 1.0
    result = rating_stability({"a": 7, "b": 8}, {"a": 7, "b": 8})
    assert (result.pct_unchanged, result.mean_abs_change) == (100, 0)
    assert result.wilcoxon_p == 1.0
    assert result.wilcoxon_statistic is None
    assert "unchanged" in result.wilcoxon_note
    # observed disagreement 0, chance (7,8),(8,7) cells: 2 * 1/4 * 1/64 > 0 -> kappa = 1
    assert result.weighted_kappa == approx(1.0)


def test_stability_kappa_undefined_when_everyone_gives_one_point_twice():
    result = rating_stability({"a": 7, "b": 7}, {"a": 7, "b": 7})
    # every cell but (7,7) is empty in both rounds: chance disagreement 0, kappa 0/0
    assert result.weighted_kappa is None
    assert "undefined" in result.kappa_note


def test_stability_with_one_pair_and_with_no_pairs():
    one = rating_stability({"a": 7}, {"a": 9})
    assert one.n_paired == 1
    assert one.wilcoxon_p == approx(scipy.stats.wilcoxon([2]).pvalue)  # 1.0
    # observed = chance = (7 - 9)^2: kappa = 1 - 1 = 0
    assert one.weighted_kappa == approx(0.0)
    none = rating_stability({"a": 7, "b": None}, {"b": 8, "c": 9})
    assert none.n_paired == 0
    assert none.pct_unchanged is none.wilcoxon_p is none.weighted_kappa is None
    assert none.wilcoxon_note == "no panelist rated the item in both rounds"


# --------------------------------------------------------------------------- comprehensiveness


def test_comprehensiveness_summary():
    summary = comprehensiveness_summary([4, 5, None, 3, 4])
    # 3 4 4 5: n 4, mean 16 / 4 = 4, median 4, deviations -1 0 0 1 -> variance 2 / 3
    assert summary.n == 4
    assert summary.mean == 4
    assert summary.median == 4
    assert summary.sd == approx((2 / 3) ** 0.5)
    assert summary.counts == {1: 0, 2: 0, 3: 1, 4: 2, 5: 1}
    with pytest.raises(
        ValueError, match=re.escape("comprehensiveness score at position 0 must be in 1..5")
    ):
        comprehensiveness_summary([6])
    empty = comprehensiveness_summary([None])
    assert (empty.n, empty.mean, empty.sd, empty.median) == (0, None, None, None)
