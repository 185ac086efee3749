"""Balanced incomplete assignment designs: which clinicians rate which items, in what order.

Pure Python and numpy, no Django: the services turn a design into Assignment rows.

What a design guarantees, in order of priority:
1. every item goes to exactly k distinct raters, none of them excluded for that item;
2. workloads (fixed plus new) differ by at most one item wherever the fixed work and
   exclusions allow it;
3. the number of items each pair of raters shares is as even as the numbers allow: pairwise
   agreement (clinician vs clinician ICC over pairs sharing >= 2 items) depends on it. We
   minimise the sum of squared pair counts, which for a fixed total of pair slots is the most
   even spread, first greedily and then by workload-preserving swaps.
4. each rater's own order is a random permutation drawn from the recorded seed.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np

from annotation.errors import AnnotationError


class DesignError(AnnotationError):
    """The design asked for cannot be built; the message names the item or rater at fault."""


@dataclass(frozen=True)
class Design:
    # item -> the raters newly given that item (fixed raters are not repeated here)
    new_raters: dict[Hashable, tuple[Hashable, ...]]
    # rater -> their items (fixed and new) in their own random order
    orders: dict[Hashable, list[Hashable]]
    workload: dict[Hashable, int] = field(default_factory=dict)
    pair_counts: dict[tuple[Hashable, Hashable], int] = field(default_factory=dict)


def _capacities(
    fixed_load: np.ndarray, needed: int, order: np.ndarray, eligible: np.ndarray
) -> np.ndarray:
    """New items per rater so that totals (fixed + new) are as equal as possible, with no
    rater given more than the items they may rate (`eligible`)."""
    c = len(fixed_load)
    total = int(fixed_load.sum()) + needed
    base, extra = divmod(total, c)
    target = np.full(c, base)
    # Extra slots go first to raters already carrying the most fixed work: that keeps the
    # spread smallest when fixed work is uneven. `order` breaks ties at random.
    rank = np.lexsort((order, -fixed_load))
    target[rank[:extra]] += 1
    capacity = np.minimum(np.maximum(target - fixed_load, 0), eligible)
    # Slots a rater cannot take (over target already, or excluded) go to the least loaded
    # raters who can still take one: water-filling.
    while capacity.sum() < needed:
        open_ = capacity < eligible
        if not open_.any():
            raise DesignError("the exclusions leave fewer rater slots than the items need")
        totals = np.where(open_, fixed_load + capacity, np.iinfo(np.int64).max)
        capacity[np.lexsort((order, totals))[0]] += 1
    while capacity.sum() > needed:
        totals = np.where(capacity > 0, fixed_load + capacity, -1)
        capacity[np.lexsort((order, -totals))[0]] -= 1
    return capacity


def balanced_design(
    *,
    items: Sequence[Hashable],
    raters: Sequence[Hashable],
    k: int,
    seed: int,
    excluded: Mapping[Hashable, set[Hashable]] | None = None,
    fixed: Mapping[Hashable, set[Hashable]] | None = None,
    swap_rounds: int = 30,
) -> Design:
    """Assign every item to k raters.

    `excluded[item]` names raters who must not get that item. `fixed[item]` names raters who
    already hold it (started or submitted work that must not move); they count towards k,
    and those in `raters` towards workloads and pair counts; only the missing raters are
    chosen. An item that already has k or more fixed raters gets no new one.
    """
    excluded = excluded or {}
    fixed = fixed or {}
    if k < 1:
        raise DesignError(f"ratings per item k must be at least 1, got {k}")
    if len(set(raters)) != len(raters):
        raise DesignError("raters contain duplicates")
    if len(set(items)) != len(items):
        raise DesignError("items contain duplicates")
    if k > len(raters):
        raise DesignError(
            f"k={k} ratings per item needs at least {k} raters, the study has {len(raters)}"
        )

    rng = np.random.default_rng(seed)
    c = len(raters)
    index = {r: i for i, r in enumerate(raters)}
    order = rng.permutation(c)  # random tie-breaks between raters

    fixed_sets: list[np.ndarray] = []
    allowed = np.ones((len(items), c), dtype=bool)
    fixed_load = np.zeros(c, dtype=np.int64)
    pairs = np.zeros((c, c), dtype=np.int64)
    missing_per_item = np.zeros(len(items), dtype=np.int64)
    for row, item in enumerate(items):
        # Fixed raters outside the pool (e.g. a clinician who left after submitting) still
        # count towards k; only those in the pool count towards workloads and pairs.
        holders = fixed.get(item, set())
        held = [index[r] for r in holders if r in index]
        missing_per_item[row] = max(k - len(holders), 0)
        held_arr = np.array(sorted(held), dtype=np.int64)
        fixed_sets.append(held_arr)
        fixed_load[held_arr] += 1
        pairs[np.ix_(held_arr, held_arr)] += 1
        allowed[row, held_arr] = False
        for r in excluded.get(item, set()):
            if r in index:
                allowed[row, index[r]] = False
        missing = int(missing_per_item[row])
        if allowed[row].sum() < missing:
            raise DesignError(
                f"item {item!r} needs {missing} more raters but only {int(allowed[row].sum())} "
                "are neither excluded nor already on it"
            )
    np.fill_diagonal(pairs, 0)
    needed = int(missing_per_item.sum())
    needs_raters = missing_per_item > 0
    eligible_left = (allowed & needs_raters[:, None]).sum(axis=0)
    capacity = _capacities(fixed_load, needed, order, eligible_left)

    # Most constrained items first, random order among equals.
    eligibility = allowed.sum(axis=1)
    item_order = np.lexsort((rng.random(len(items)), eligibility))
    chosen: list[list[int]] = [[] for _ in items]
    remaining_slots_per_rater = capacity.copy()
    for row in item_order:
        missing = int(missing_per_item[row])
        if missing == 0:
            continue
        picked: list[int] = list(fixed_sets[row])
        new: list[int] = []
        for _ in range(missing):
            candidates = allowed[row] & (remaining_slots_per_rater > 0)
            candidates[new] = False
            if not candidates.any():
                raise DesignError(
                    f"item {items[row]!r} could not get k={k} raters: "
                    "the exclusions leave no rater with free capacity"
                )
            # A rater with as many free slots as items left that they may rate must be on
            # every one of them.
            forced = candidates & (remaining_slots_per_rater >= eligible_left)
            if forced.any():
                pool = np.flatnonzero(forced)
            else:
                best = remaining_slots_per_rater[candidates].max()
                pool = np.flatnonzero(candidates & (remaining_slots_per_rater >= best - 1))
            shared = pairs[np.ix_(pool, picked)].sum(axis=1) if picked else np.zeros(len(pool))
            key = np.lexsort((order[pool], -remaining_slots_per_rater[pool], shared))
            r = int(pool[key[0]])
            for p in picked:
                pairs[r, p] += 1
                pairs[p, r] += 1
            picked.append(r)
            new.append(r)
            remaining_slots_per_rater[r] -= 1
        chosen[row] = new
        eligible_left -= allowed[row]

    _improve_pair_balance(chosen, fixed_sets, allowed, pairs, rng, swap_rounds)

    holders: dict[int, list[Hashable]] = {i: [] for i in range(c)}
    new_raters: dict[Hashable, tuple[Hashable, ...]] = {}
    for row, item in enumerate(items):
        new_raters[item] = tuple(raters[r] for r in chosen[row])
        for r in [*fixed_sets[row], *chosen[row]]:
            holders[int(r)].append(item)
    orders = {}
    for i, r in enumerate(raters):
        its = holders[i]
        orders[r] = [its[j] for j in rng.permutation(len(its))]
    workload = {r: len(orders[r]) for r in raters}
    pair_counts = {
        (raters[a], raters[b]): int(pairs[a, b]) for a in range(c) for b in range(a + 1, c)
    }
    return Design(new_raters=new_raters, orders=orders, workload=workload, pair_counts=pair_counts)


def _improve_pair_balance(
    chosen: list[list[int]],
    fixed_sets: list[np.ndarray],
    allowed: np.ndarray,
    pairs: np.ndarray,
    rng: np.random.Generator,
    rounds: int,
) -> None:
    """Swap raters between two items (a on item i <-> b on item j) when that lowers the sum of
    squared pair counts. Workloads do not change; fixed raters never move."""
    movable = [row for row, new in enumerate(chosen) if new]
    if len(movable) < 2 or pairs.shape[0] < 3:
        return
    budget = rounds * len(movable)
    by_rater: dict[int, list[int]] = {}
    for row in movable:
        for r in chosen[row]:
            by_rater.setdefault(r, []).append(row)

    def others(row: int, without: int) -> list[int]:
        return [int(x) for x in fixed_sets[row]] + [x for x in chosen[row] if x != without]

    rows = rng.integers(0, len(movable), size=budget)
    picks = rng.random(size=(budget, 3))
    for step in range(budget):
        i = movable[rows[step]]
        a = chosen[i][int(picks[step, 0] * len(chosen[i]))]
        i_rest = others(i, a)
        # candidate b: a rater not on item i, allowed there
        b_pool = np.flatnonzero(allowed[i])
        b_pool = b_pool[~np.isin(b_pool, chosen[i])]
        if len(b_pool) == 0:
            continue
        b = int(b_pool[int(picks[step, 1] * len(b_pool))])
        j_rows = by_rater.get(b, [])
        if not j_rows:
            continue
        j = j_rows[int(picks[step, 2] * len(j_rows))]
        if j == i or a in chosen[j] or not allowed[j, a] or a in fixed_sets[j]:
            continue
        j_rest = others(j, b)
        # Change in sum of squares: on item i, pairs (a, x) lose one and (b, x) gain one for
        # x in i_rest; on item j, (b, y) lose one and (a, y) gain one for y in j_rest.
        delta_counts: dict[tuple[int, int], int] = {}
        for x in i_rest:
            for p, d in (((a, x), -1), ((b, x), +1)):
                key = (min(p), max(p))
                delta_counts[key] = delta_counts.get(key, 0) + d
        for y in j_rest:
            for p, d in (((b, y), -1), ((a, y), +1)):
                key = (min(p), max(p))
                delta_counts[key] = delta_counts.get(key, 0) + d
        gain = 0
        for (u, v), d in delta_counts.items():
            if d:
                gain += (pairs[u, v] + d) ** 2 - pairs[u, v] ** 2
        if gain >= 0:
            continue
        for (u, v), d in delta_counts.items():
            pairs[u, v] += d
            pairs[v, u] += d
        chosen[i][chosen[i].index(a)] = b
        chosen[j][chosen[j].index(b)] = a
        by_rater[a].remove(i)
        by_rater[a].append(j)
        by_rater[b].remove(j)
        by_rater[b].append(i)
