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
    _check_request(items, raters, k)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(raters))  # random tie-breaks between raters
    state = _starting_state(items, raters, k, excluded or {}, fixed or {})
    chosen = _deal(state, items, k, order, rng)
    _improve_pair_balance(chosen, state.fixed_sets, state.allowed, state.pairs, rng, swap_rounds)
    return _design(items, raters, chosen, state, rng)


def _check_request(items: Sequence[Hashable], raters: Sequence[Hashable], k: int) -> None:
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


@dataclass
class _State:
    """The working arrays of one design: rows are items, columns raters (by position)."""

    fixed_sets: list[np.ndarray]  # per item, its fixed raters that are in the pool
    allowed: np.ndarray  # (items, raters): may the rater still be given the item
    fixed_load: np.ndarray  # fixed items per rater
    pairs: np.ndarray  # (raters, raters): items each pair of raters shares
    missing: np.ndarray  # per item, raters still to choose


def _starting_state(
    items: Sequence[Hashable],
    raters: Sequence[Hashable],
    k: int,
    excluded: Mapping[Hashable, set[Hashable]],
    fixed: Mapping[Hashable, set[Hashable]],
) -> _State:
    """Fixed work and exclusions as arrays; an item that cannot get k raters is an error."""
    c = len(raters)
    index = {r: i for i, r in enumerate(raters)}
    state = _State(
        fixed_sets=[],
        allowed=np.ones((len(items), c), dtype=bool),
        fixed_load=np.zeros(c, dtype=np.int64),
        pairs=np.zeros((c, c), dtype=np.int64),
        missing=np.zeros(len(items), dtype=np.int64),
    )
    for row, item in enumerate(items):
        # Fixed raters outside the pool (e.g. a clinician who left after submitting) still
        # count towards k; only those in the pool count towards workloads and pairs.
        holders = fixed.get(item, set())
        held = np.array(sorted(index[r] for r in holders if r in index), dtype=np.int64)
        state.missing[row] = max(k - len(holders), 0)
        state.fixed_sets.append(held)
        state.fixed_load[held] += 1
        state.pairs[np.ix_(held, held)] += 1
        state.allowed[row, held] = False
        for r in excluded.get(item, set()):
            if r in index:
                state.allowed[row, index[r]] = False
        missing = int(state.missing[row])
        if state.allowed[row].sum() < missing:
            raise DesignError(
                f"item {item!r} needs {missing} more raters but only "
                f"{int(state.allowed[row].sum())} are neither excluded nor already on it"
            )
    np.fill_diagonal(state.pairs, 0)
    return state


def _deal(
    state: _State, items: Sequence[Hashable], k: int, order: np.ndarray, rng: np.random.Generator
) -> list[list[int]]:
    """The greedy first pass: per item (most constrained first, random order among equals)
    the missing raters, each the one sharing fewest items with those already on it.
    Returns per item the raters newly given it; `state.pairs` counts them in."""
    eligible_left = (state.allowed & (state.missing > 0)[:, None]).sum(axis=0)
    free = _capacities(state.fixed_load, int(state.missing.sum()), order, eligible_left)
    item_order = np.lexsort((rng.random(len(items)), state.allowed.sum(axis=1)))
    chosen: list[list[int]] = [[] for _ in items]
    for row in item_order:
        missing = int(state.missing[row])
        if missing == 0:
            continue
        picked: list[int] = list(state.fixed_sets[row])
        new: list[int] = []
        for _ in range(missing):
            candidates = state.allowed[row] & (free > 0)
            candidates[new] = False
            if not candidates.any():
                raise DesignError(
                    f"item {items[row]!r} could not get k={k} raters: "
                    "the exclusions leave no rater with free capacity"
                )
            r = _pick_rater(candidates, picked, free, eligible_left, state.pairs, order)
            for p in picked:
                state.pairs[r, p] += 1
                state.pairs[p, r] += 1
            picked.append(r)
            new.append(r)
            free[r] -= 1
        chosen[row] = new
        eligible_left -= state.allowed[row]
    return chosen


def _pick_rater(
    candidates: np.ndarray,
    picked: list[int],
    free: np.ndarray,
    eligible_left: np.ndarray,
    pairs: np.ndarray,
    order: np.ndarray,
) -> int:
    """One more rater for an item: among those with (nearly) the most free slots, the one
    sharing fewest items with the raters already on it."""
    # A rater with as many free slots as items left that they may rate must be on every one
    # of them.
    forced = candidates & (free >= eligible_left)
    if forced.any():
        pool = np.flatnonzero(forced)
    else:
        best = free[candidates].max()
        pool = np.flatnonzero(candidates & (free >= best - 1))
    shared = pairs[np.ix_(pool, picked)].sum(axis=1) if picked else np.zeros(len(pool))
    key = np.lexsort((order[pool], -free[pool], shared))
    return int(pool[key[0]])


def _design(
    items: Sequence[Hashable],
    raters: Sequence[Hashable],
    chosen: list[list[int]],
    state: _State,
    rng: np.random.Generator,
) -> Design:
    """The result by item and rater names, each rater's items in their own random order."""
    c = len(raters)
    holders: dict[int, list[Hashable]] = {i: [] for i in range(c)}
    new_raters: dict[Hashable, tuple[Hashable, ...]] = {}
    for row, item in enumerate(items):
        new_raters[item] = tuple(raters[r] for r in chosen[row])
        for r in [*state.fixed_sets[row], *chosen[row]]:
            holders[int(r)].append(item)
    orders = {}
    for i, r in enumerate(raters):
        its = holders[i]
        orders[r] = [its[j] for j in rng.permutation(len(its))]
    workload = {r: len(orders[r]) for r in raters}
    pair_counts = {
        (raters[a], raters[b]): int(state.pairs[a, b]) for a in range(c) for b in range(a + 1, c)
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
        swap = _propose_swap(
            movable[rows[step]], picks[step], chosen, fixed_sets, allowed, by_rater
        )
        if swap is None:
            continue
        i, a, j, b = swap
        delta = _pair_changes(a, b, others(i, a), others(j, b))
        gain = sum((pairs[u, v] + d) ** 2 - pairs[u, v] ** 2 for (u, v), d in delta.items() if d)
        if gain >= 0:
            continue
        for (u, v), d in delta.items():
            pairs[u, v] += d
            pairs[v, u] += d
        chosen[i][chosen[i].index(a)] = b
        chosen[j][chosen[j].index(b)] = a
        by_rater[a].remove(i)
        by_rater[a].append(j)
        by_rater[b].remove(j)
        by_rater[b].append(i)


def _propose_swap(
    i: int,
    pick: np.ndarray,
    chosen: list[list[int]],
    fixed_sets: list[np.ndarray],
    allowed: np.ndarray,
    by_rater: Mapping[int, list[int]],
) -> tuple[int, int, int, int] | None:
    """A random candidate swap (i, a, j, b): a new rater a of item i, a rater b allowed on i
    who holds item j, where a may take j. None when the draw gives no valid swap."""
    a = chosen[i][int(pick[0] * len(chosen[i]))]
    b_pool = np.flatnonzero(allowed[i])
    b_pool = b_pool[~np.isin(b_pool, chosen[i])]
    if len(b_pool) == 0:
        return None
    b = int(b_pool[int(pick[1] * len(b_pool))])
    j_rows = by_rater.get(b, [])
    if not j_rows:
        return None
    j = j_rows[int(pick[2] * len(j_rows))]
    if j == i or a in chosen[j] or not allowed[j, a] or a in fixed_sets[j]:
        return None
    return i, a, j, b


def _pair_changes(
    a: int, b: int, i_rest: list[int], j_rest: list[int]
) -> dict[tuple[int, int], int]:
    """How pair counts change when a and b swap: on item i, pairs (a, x) lose one and (b, x)
    gain one for x in i_rest; on item j, (b, y) lose one and (a, y) gain one for y in j_rest."""
    delta: dict[tuple[int, int], int] = {}
    for rest, loser, gainer in ((i_rest, a, b), (j_rest, b, a)):
        for x in rest:
            for p, d in (((loser, x), -1), ((gainer, x), +1)):
                key = (min(p), max(p))
                delta[key] = delta.get(key, 0) + d
    return delta
