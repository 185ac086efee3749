"""The balanced incomplete assignment design (pure, no database)."""

from __future__ import annotations

import itertools
from collections import Counter

import pytest

from annotation.design import DesignError, balanced_design


def _check(design, items, raters, k, excluded=None, fixed=None):
    excluded = excluded or {}
    fixed = fixed or {}
    for item in items:
        new = design.new_raters[item]
        held = fixed.get(item, set())
        assert len(new) + len(held) == k, item
        assert len(set(new) | held) == k, f"duplicate rater on {item}"
        assert not set(new) & excluded.get(item, set()), f"excluded rater on {item}"
    for rater, order in design.orders.items():
        assert len(order) == len(set(order)) == design.workload[rater]


@pytest.mark.parametrize(
    "n,c,k", [(48, 4, 2), (57, 5, 2), (100, 7, 3), (30, 6, 4), (10, 2, 2), (1, 3, 2)]
)
def test_every_item_gets_k_raters_and_workloads_differ_by_at_most_one(n, c, k):
    items, raters = list(range(n)), [f"r{i}" for i in range(c)]
    design = balanced_design(items=items, raters=raters, k=k, seed=3)
    _check(design, items, raters, k)
    loads = design.workload.values()
    assert max(loads) - min(loads) <= 1
    assert sum(loads) == n * k


@pytest.mark.parametrize("n,c,k", [(48, 4, 2), (57, 5, 2), (100, 7, 3), (300, 10, 3)])
def test_pairs_share_items_as_evenly_as_the_numbers_allow(n, c, k):
    design = balanced_design(items=list(range(n)), raters=list(range(c)), k=k, seed=11)
    counts = list(design.pair_counts.values())
    assert len(counts) == c * (c - 1) // 2
    assert sum(counts) == n * k * (k - 1) // 2
    assert max(counts) - min(counts) <= 1, Counter(counts)
    # pair counts agree with the orders they came from
    holders = {
        item: {r for r, order in design.orders.items() if item in order} for item in range(n)
    }
    for (a, b), shared in design.pair_counts.items():
        assert shared == sum(1 for h in holders.values() if a in h and b in h)


def test_the_seed_fixes_the_design_and_each_raters_order():
    a = balanced_design(items=list(range(40)), raters=list("ABCD"), k=2, seed=5)
    b = balanced_design(items=list(range(40)), raters=list("ABCD"), k=2, seed=5)
    c = balanced_design(items=list(range(40)), raters=list("ABCD"), k=2, seed=6)
    assert a.orders == b.orders and a.new_raters == b.new_raters
    assert a.orders != c.orders
    # each rater's order is a shuffle, not the item order
    assert any(order != sorted(order) for order in a.orders.values())


def test_exclusions_are_respected_and_balance_holds():
    items, raters = list(range(40)), list("ABCDE")
    excluded = {i: {"A"} for i in range(0, 40, 4)} | {i: {"B", "C"} for i in range(1, 40, 8)}
    design = balanced_design(items=items, raters=raters, k=2, seed=1, excluded=excluded)
    _check(design, items, raters, 2, excluded=excluded)
    assert max(design.workload.values()) - min(design.workload.values()) <= 1


def test_fixed_work_stays_and_only_the_rest_is_dealt():
    items, raters = list(range(20)), ["A", "B", "C", "D"]
    fixed = {i: {"A"} for i in range(8)}  # A already rated items 0-7
    design = balanced_design(items=items, raters=raters, k=2, seed=2, fixed=fixed)
    _check(design, items, raters, 2, fixed=fixed)
    assert all("A" not in design.new_raters[i] for i in range(8))
    assert sum(design.workload.values()) == 40
    assert max(design.workload.values()) - min(design.workload.values()) <= 1


def test_impossible_designs_name_the_problem():
    with pytest.raises(DesignError, match="k=3 ratings per item needs at least 3 raters"):
        balanced_design(items=[1, 2], raters=["A", "B"], k=3, seed=0)
    with pytest.raises(DesignError, match="item 7 needs 2 more raters but only 1"):
        balanced_design(items=[7], raters=["A", "B"], k=2, seed=0, excluded={7: {"B"}})
    with pytest.raises(DesignError, match="duplicates"):
        balanced_design(items=[1, 1], raters=["A", "B"], k=1, seed=0)


def test_small_complete_case_uses_every_pair_equally():
    # 4 raters, k=2: 6 possible pairs; 12 items give each pair exactly 2 items.
    design = balanced_design(items=list(range(12)), raters=list("ABCD"), k=2, seed=9)
    assert set(design.pair_counts.values()) == {2}
    assert set(design.pair_counts) == set(itertools.combinations("ABCD", 2))
