"""Bootstrap requests answered together (agreement.stats.batch): each gets exactly what it gets
alone, the ones that can share a pass over the resamples share it, and one request's error
stays its own.

Tolerance: exact equality (the same resamples and the same arithmetic per statistic)."""

from __future__ import annotations

import numpy as np
import pytest

from agreement.stats import DifferenceStatistic, IccStatistic
from agreement.stats.batch import Bootstraps, bootstrap_together
from agreement.stats.bootstrap import BootstrapResult, bootstrap_named

from .factories import MeanStatistic, random_matrix


class SeenWeights(MeanStatistic):
    """A mean that records the first row of every weights array it is evaluated on, in order."""

    def __init__(self, values: np.ndarray, seen: list) -> None:
        super().__init__(values)
        self.seen = seen

    def from_weights(self, weights: np.ndarray) -> np.ndarray:
        self.seen.append((self, weights[0].tobytes()))
        return super().from_weights(weights)


class Refuses(MeanStatistic):
    """A statistic whose resamples cannot be evaluated (as a data problem would make one)."""

    def from_weights(self, weights: np.ndarray) -> np.ndarray:
        if weights.shape[0] > 1:
            raise ValueError("refused: no variation in these resamples")
        return super().from_weights(weights)


def _values(seed: int, n: int = 60) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=n)


def _same(a: dict[str, BootstrapResult], b: dict[str, BootstrapResult]) -> None:
    assert a.keys() == b.keys()
    for key in a:
        np.testing.assert_array_equal(a[key].distribution, b[key].distribution)
        np.testing.assert_array_equal(
            [a[key].ci_low, a[key].ci_high, a[key].acceleration],
            [b[key].ci_low, b[key].ci_high, b[key].acceleration],
        )


def test_each_request_gets_what_it_gets_alone() -> None:
    matrix = random_matrix(np.random.default_rng(1), 60, 3, likert=True)
    first = {"mean": MeanStatistic(_values(1)), "icc": IccStatistic(matrix, "ICC(A,1)")}
    second = {
        "mean": MeanStatistic(_values(2)),
        "difference": DifferenceStatistic(MeanStatistic(_values(3)), MeanStatistic(_values(4))),
    }
    percentile = {"mean": MeanStatistic(_values(5))}
    requests = [
        Bootstraps(first, n_resamples=150, seed=4),
        Bootstraps(second, n_resamples=150, seed=4),
        Bootstraps(percentile, n_resamples=150, seed=4, method="percentile"),
    ]
    together = bootstrap_together(requests)
    for request, got in zip(requests, together, strict=True):
        assert isinstance(got, dict)
        _same(got, bootstrap_named(request.statistics, **request.arguments()))


def test_requests_on_the_same_items_and_seed_share_one_pass_chunk_by_chunk() -> None:
    seen: list = []
    a, b = SeenWeights(_values(1), seen), SeenWeights(_values(2), seen)
    other_seed = SeenWeights(_values(3), seen)
    bootstrap_together(
        [
            Bootstraps({"a": a}, n_resamples=10, seed=9, method="percentile"),
            Bootstraps({"b": b}, n_resamples=10, seed=9, method="percentile"),
            Bootstraps({"c": other_seed}, n_resamples=10, seed=10, method="percentile"),
        ]
    )
    # a and b evaluated on each weights array one after the other (the point estimate first)
    order = [s for s, _ in seen if s is not other_seed]
    assert order[0] is a and order[1] is b
    by_statistic = {s: [w for t, w in seen if t is s] for s in (a, b)}
    assert by_statistic[a] == by_statistic[b]
    assert all(
        first is a and second is b for first, second in zip(order[::2], order[1::2], strict=True)
    )
    # another seed draws other resamples, in a pass of its own
    assert [w for s, w in seen if s is other_seed][1:] != by_statistic[a][1:]


def test_a_generator_seed_is_answered_alone_on_its_own_stream() -> None:
    values = _values(1)
    got = bootstrap_together(
        [
            Bootstraps({"m": MeanStatistic(values)}, n_resamples=50, seed=np.random.default_rng(3)),
            Bootstraps({"m": MeanStatistic(values)}, n_resamples=50, seed=np.random.default_rng(3)),
        ]
    )
    # the same stream each, as two separate calls would draw (not one shared pass)
    _same(got[0], got[1])
    assert got[0]["m"].seed is None


def test_a_request_that_raises_gets_its_error_and_the_others_their_results() -> None:
    good = {"mean": MeanStatistic(_values(1))}
    requests = [
        Bootstraps(good, n_resamples=40, seed=2),
        Bootstraps({"bad": Refuses(_values(2))}, n_resamples=40, seed=2),
    ]
    got = bootstrap_together(requests)
    _same(got[0], bootstrap_named(good, n_resamples=40, seed=2))
    assert isinstance(got[1], ValueError) and "refused" in str(got[1])


def test_requests_on_different_items_are_not_mixed() -> None:
    got = bootstrap_together(
        [
            Bootstraps({"m": MeanStatistic(_values(1, n=60))}, n_resamples=30, seed=1),
            Bootstraps({"m": MeanStatistic(_values(2, n=61))}, n_resamples=30, seed=1),
        ]
    )
    assert got[0]["m"].n_items == 60 and got[1]["m"].n_items == 61


def test_a_request_with_no_statistic_is_refused_as_alone() -> None:
    (got,) = bootstrap_together([Bootstraps({}, seed=1)])
    with pytest.raises(ValueError) as alone:
        bootstrap_named({}, seed=1)
    assert isinstance(got, ValueError) and str(got) == str(alone.value)
