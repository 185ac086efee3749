"""Several bootstrap requests answered in one pass over the resamples.

The cells of a report's row ask for bootstraps of different statistics on the same items
from the same seed: each machine's ICC and alphas, the clinicians' form, each difference. Asked
one after another, every request walks every resample chunk, and what the statistics share per
chunk (the clinicians' z-score means, ranks and two-way fit, :mod:`agreement.stats.shared`) is
kept for the next request only while it fits in memory: at 30,000 items a cell has about 700
chunks, more than are kept, so every machine computed the clinicians' side again
(bench/README.md, issue 32). Answered together, the requests with the same arguments and items
are one :func:`bootstrap_cis` call: each chunk is drawn once and every statistic evaluated on
it, so the shared work is done once per chunk whatever the number of machines.

Each request's results are those it gets alone (same seed, same chunks, each statistic's values
its own): grouping changes when the work is done, not the numbers. Only requests with an int
seed are grouped; a Generator's stream moves on with every draw, so each such request is
answered alone, as before."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from .bootstrap import BootstrapResult, ItemStatistic, bootstrap_cis, bootstrap_named
from .common import recorded_seed


@dataclass(frozen=True)
class Bootstraps:
    """Statistics (by key) to bootstrap on one item universe, with their arguments."""

    statistics: Mapping[str, ItemStatistic] = field(repr=False)
    n_resamples: int = 1000
    confidence: float = 0.95
    method: str = "bca"
    seed: int | np.integer | np.random.Generator | None = None

    def arguments(self) -> dict[str, object]:
        return {
            "n_resamples": self.n_resamples,
            "confidence": self.confidence,
            "method": self.method,
            "seed": self.seed,
        }


Answer = dict[str, BootstrapResult] | ValueError


def _answer_alone(request: Bootstraps) -> Answer:
    try:
        return bootstrap_named(request.statistics, **request.arguments())
    except ValueError as exc:  # the data allow no estimate: the asker decides what it means
        return exc


def bootstrap_together(requests: Sequence[Bootstraps]) -> list[Answer]:
    """Each request's results (as :func:`agreement.stats.bootstrap.bootstrap_named` gives them), or the ValueError it
    raises alone. Requests with an int seed, the same arguments and the same items (in the
    same order) are answered by one :func:`bootstrap_cis` call; if that call raises, its
    requests are answered one by one, so each gets its own results or its own error."""
    groups: list[tuple[tuple, list[int]]] = []
    answers: dict[int, Answer] = {}
    for i, request in enumerate(requests):
        if not request.statistics or recorded_seed(request.seed) is None:
            answers[i] = _answer_alone(request)
            continue
        key = (request.n_resamples, request.confidence, request.method, recorded_seed(request.seed))
        items = _items(request)
        for group_key, members in groups:
            if group_key == key and _items(requests[members[0]]).equals(items):
                members.append(i)
                break
        else:
            groups.append((key, [i]))
    for _, members in groups:
        if len(members) == 1:
            answers[members[0]] = _answer_alone(requests[members[0]])
            continue
        statistics = [s for i in members for s in requests[i].statistics.values()]
        try:
            results = iter(bootstrap_cis(statistics, **requests[members[0]].arguments()))
        except ValueError:
            for i in members:
                answers[i] = _answer_alone(requests[i])
            continue
        for i in members:
            answers[i] = {key: next(results) for key in requests[i].statistics}
    return [answers[i] for i in range(len(requests))]


def _items(request: Bootstraps) -> pd.Index:
    return next(iter(request.statistics.values())).items
