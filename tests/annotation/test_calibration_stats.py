"""The calibration agreement (annotation.calibration_stats) on cases checked by hand."""

from __future__ import annotations

import math

import pytest

from annotation.calibration_stats import (
    MIN_KAPPA_PAIRS,
    CalibrationPair,
    calibration_agreement,
    quadratic_weighted_kappa,
)

# Rater 1 1 2 3 3 against reference 1 1 2 2 3 on a 1-3 scale, weights (i-j)^2/4:
# observed weighted disagreement = (1/4) / 5 = 0.05; margins rater (.4, .2, .4), reference
# (.4, .4, .2); expected = .4*(.4*1/4 + .2*1) + .2*(.4*1/4 + .2*1/4) + .4*(.4*1 + .4*1/4)
# = .12 + .03 + .2 = .35; kappa = 1 - .05/.35 = 6/7.
RATER = [1, 1, 2, 3, 3]
REFERENCE = [1, 1, 2, 2, 3]


def _pairs(values, references, low=1, high=3):
    return [CalibrationPair(v, r, low, high) for v, r in zip(values, references, strict=True)]


def test_weighted_kappa_of_the_hand_checked_case():
    kappa = quadratic_weighted_kappa(RATER, REFERENCE, scale_min=1, scale_max=3)
    assert kappa == pytest.approx(6 / 7)


def test_agreement_of_the_hand_checked_case():
    result = calibration_agreement(_pairs(RATER, REFERENCE))
    assert result.n == 5
    assert result.exact == pytest.approx(4 / 5)
    assert result.within_one == 1.0
    assert result.mean_abs_diff == pytest.approx(1 / 5)
    assert result.mean_diff == pytest.approx(1 / 5)  # one point more lenient, once
    assert result.weighted_kappa == pytest.approx(6 / 7)


def test_perfect_agreement_is_kappa_one_and_a_reversal_is_negative():
    assert quadratic_weighted_kappa([1, 2, 3], [1, 2, 3], scale_min=1, scale_max=3) == 1.0
    # reversed on 1-3: observed (1 + 0 + 1) / 3 = 2/3, expected 12/36 = 1/3: kappa -1
    reversed_ = quadratic_weighted_kappa([1, 2, 3], [3, 2, 1], scale_min=1, scale_max=3)
    assert reversed_ == pytest.approx(-1.0)


def test_no_kappa_below_the_minimum_pairs_or_across_scales_or_without_spread():
    few = calibration_agreement(_pairs(RATER[: MIN_KAPPA_PAIRS - 1], REFERENCE[:4]))
    assert few.n == MIN_KAPPA_PAIRS - 1 and few.weighted_kappa is None
    assert few.exact == pytest.approx(3 / 4)
    mixed = calibration_agreement(_pairs(RATER, REFERENCE)[:4] + _pairs([4], [4], 1, 5))
    assert mixed.n == 5 and mixed.weighted_kappa is None
    flat = quadratic_weighted_kappa([2] * 5, [2] * 5, scale_min=1, scale_max=3)
    assert flat is None  # no expected disagreement: kappa means nothing


def test_no_pairs_gives_no_numbers():
    empty = calibration_agreement([])
    assert empty.n == 0 and empty.exact is None and empty.weighted_kappa is None


def test_a_value_off_the_scale_is_refused():
    with pytest.raises(ValueError, match="outside the scale 1-3"):
        quadratic_weighted_kappa([1, 4], [1, 2], scale_min=1, scale_max=3)


def test_the_summary_is_json_ready():
    summary = calibration_agreement(_pairs(RATER, REFERENCE)).as_dict()
    assert set(summary) == {
        "n",
        "exact",
        "within_one",
        "mean_abs_diff",
        "mean_diff",
        "weighted_kappa",
    }
    assert all(v is None or math.isfinite(v) for v in summary.values())
