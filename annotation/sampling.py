"""Stratified, seeded draws of the items clinicians will rate. Pure Python, no Django: the
services read the study's items into ``Unit`` rows and store what ``draw`` returns.

- Strata are the distinct values of the chosen keys (category, subcategory, model...).
- Allocation is either explicit quotas per stratum or proportional to a total, rounded by
  the largest-remainder (Hamilton) method so the counts sum exactly to the total.
- Paired design: the sampled unit is a case (the same input answered by every model) and a
  drawn case brings all its models' outputs, so model comparisons are within case. The
  model is then not a stratum key: a case holds every model, so the models are balanced by
  construction (each answers the same drawn cases). A model asked for as a stratum is
  recorded as balanced by pairing (``Draw.model_by_pairing``), never dropped without a
  word. Cases missing a model are drawn after the complete ones of their stratum and named
  in the notes.
- Each stratum is shuffled by its own generator seeded with (seed, stratum label), from
  units sorted by case and id: the same seed and items give the same draw, and one
  stratum's draw does not depend on which other strata exist.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction

from annotation.errors import AnnotationError

STRATUM_KEYS = ("category", "subcategory", "benchmark", "model")
SEPARATOR = " / "
PROPORTIONAL = "proportional"
QUOTAS = "quotas"


class SamplingError(AnnotationError):
    """A draw that cannot be made as asked; the message names the stratum or field at fault."""


@dataclass(frozen=True)
class Unit:
    """One item as the sampler sees it: its id, its case and its stratum values."""

    item_id: int
    case: str
    model: str
    values: Mapping[str, str]


@dataclass(frozen=True)
class Stratum:
    label: str
    population: int  # cases in a paired draw, items otherwise
    drawn: int
    population_items: int
    drawn_items: int


@dataclass(frozen=True)
class Draw:
    item_ids: tuple[int, ...]
    strata: tuple[Stratum, ...]
    paired: bool
    models: tuple[str, ...]
    keys: tuple[str, ...]  # the keys stratified on (a paired draw leaves the model out)
    unpaired_cases: tuple[tuple[str, str, tuple[str, ...]], ...] = field(default=())
    # (stratum label, case, models it lacks) for every drawn case missing a model
    model_by_pairing: bool = False
    # the model was asked for as a stratum of a paired draw: balanced by the pairing instead

    @property
    def total(self) -> int:
        return sum(s.drawn for s in self.strata)

    @property
    def model_note(self) -> str:
        """The words for a model stratum balanced by the pairing; "" when none was asked."""
        if not self.model_by_pairing:
            return ""
        return model_balance_note(
            n_models=len(self.models), n_cases=self.total, n_unpaired=len(self.unpaired_cases)
        )


def stratum_label(values: Sequence[str]) -> str:
    return SEPARATOR.join(values) if values else "(all items)"


def check_keys(keys: Sequence[str]) -> list[str]:
    unknown = [k for k in keys if k not in STRATUM_KEYS]
    if unknown:
        raise SamplingError(
            f"unknown stratum key {', '.join(unknown)}; use any of {', '.join(STRATUM_KEYS)}",
            field="strata",
        )
    if len(set(keys)) != len(keys):
        raise SamplingError("a stratum key is named twice", field="strata")
    return list(keys)


def largest_remainder(populations: Mapping[str, int], total: int) -> dict[str, int]:
    """``total`` shared among the strata in proportion to their populations: each gets the
    floor of its exact share, and the units left go to the largest fractional parts (ties to
    the larger population, then the label's order). Never more than a stratum holds."""
    size = sum(populations.values())
    if total < 0:
        raise SamplingError("the total cannot be negative", field="total")
    if total > size:
        raise SamplingError(
            f"the total {total} is more than the {size} units there are to draw from",
            field="total",
        )
    if size == 0:
        return {label: 0 for label in populations}
    shares = {label: Fraction(total * n, size) for label, n in populations.items()}
    counts = {label: int(share) for label, share in shares.items()}
    left = total - sum(counts.values())
    order = sorted(populations, key=lambda lb: (-(shares[lb] - counts[lb]), -populations[lb], lb))
    for label in order[:left]:
        counts[label] += 1
    return counts


def _check_quotas(populations: Mapping[str, int], quotas: Mapping[str, int]) -> dict[str, int]:
    unknown = [label for label in quotas if label not in populations]
    if unknown:
        known = "; ".join(sorted(populations)) or "none"
        raise SamplingError(
            f"no stratum named {unknown[0]!r} (the strata are: {known})", field="quotas"
        )
    for label, n in quotas.items():
        if n < 0:
            raise SamplingError(f"the quota of stratum {label!r} is negative", field="quotas")
        if n > populations[label]:
            raise SamplingError(
                f"the quota of {n} for stratum {label!r} is more than its "
                f"{populations[label]} units",
                field="quotas",
            )
    return {label: int(quotas.get(label, 0)) for label in populations}


def _groups(
    units: Sequence[Unit], keys: Sequence[str], paired: bool
) -> dict[str, dict[str, list[Unit]]]:
    """stratum label -> sampling unit key -> its items. A unit is a case when paired (the
    model is then not a stratum key), an item otherwise."""
    groups: dict[str, dict[str, list[Unit]]] = {}
    for u in units:
        label = stratum_label([u.values.get(k, "") for k in keys])
        unit_key = u.case if paired else f"{u.case}\x00{u.model}\x00{u.item_id}"
        groups.setdefault(label, {}).setdefault(unit_key, []).append(u)
    return dict(sorted(groups.items()))


def _shuffled(seed: int, label: str, cases: Mapping[str, list[Unit]], models: set[str]) -> list:
    """The stratum's unit keys in random order, complete cases first."""
    keys = sorted(cases)
    rng = random.Random(f"{seed}:{label}")
    rng.shuffle(keys)
    return sorted(keys, key=lambda k: len(models - {u.model for u in cases[k]}) > 0)


def draw(
    units: Sequence[Unit],
    *,
    keys: Sequence[str],
    seed: int,
    total: int | None = None,
    quotas: Mapping[str, int] | None = None,
    paired: bool = True,
) -> Draw:
    """The seeded stratified draw: by ``quotas`` (stratum label -> units) or proportional to
    ``total``. In a paired draw a unit is a case and counts are in cases."""
    keys = check_keys(keys)
    # A case holds every model's output, so the model cannot split cases into strata; the
    # pairing balances it instead, and the draw says so (model_by_pairing).
    model_by_pairing = paired and "model" in keys
    if model_by_pairing:
        keys = [k for k in keys if k != "model"]
    if (total is None) == (quotas is None):
        raise SamplingError("give either a total or quotas per stratum", field="total")
    groups = _groups(units, keys, paired)
    populations = {label: len(cases) for label, cases in groups.items()}
    if quotas is not None:
        counts = _check_quotas(populations, quotas)
    else:
        counts = largest_remainder(populations, int(total))
    models = {u.model for u in units}
    chosen: list[int] = []
    strata: list[Stratum] = []
    unpaired: list[tuple[str, str, tuple[str, ...]]] = []
    for label, cases in groups.items():
        order = _shuffled(seed, label, cases, models if paired else set())
        picked = order[: counts[label]]
        ids = [u.item_id for k in picked for u in cases[k]]
        chosen.extend(ids)
        if paired:
            for k in picked:
                lacks = tuple(sorted(models - {u.model for u in cases[k]}))
                if lacks:
                    unpaired.append((label, k, lacks))
        strata.append(
            Stratum(
                label=label,
                population=populations[label],
                drawn=len(picked),
                population_items=sum(len(v) for v in cases.values()),
                drawn_items=len(ids),
            )
        )
    return Draw(
        item_ids=tuple(sorted(chosen)),
        strata=tuple(strata),
        paired=paired,
        models=tuple(sorted(models)),
        keys=tuple(keys),
        unpaired_cases=tuple(unpaired),
        model_by_pairing=model_by_pairing,
    )


def model_balance_note(*, n_models: int, n_cases: int, n_unpaired: int) -> str:
    """What a paired draw did with a model stratum, in words for the page, the command and
    the report: the model is balanced by the pairing rather than stratified on."""
    models = f"{n_models} model{'s' if n_models != 1 else ''}"
    cases = f"{n_cases} drawn case{'s' if n_cases != 1 else ''}"
    note = (
        f"Model is not a stratum of a paired draw: each drawn case brings the output of every "
        f"model, so the {models} are balanced by construction (each answers the same {cases})"
    )
    if n_unpaired:
        lack = "lacks" if n_unpaired == 1 else "lack"
        note += f", except {n_unpaired} case{'s' if n_unpaired != 1 else ''} that {lack} a model"
    return note + "."


def parse_quotas(text: str) -> dict[str, int]:
    """Quotas written one a line as ``stratum label = n`` (the label as the preview shows it)."""
    quotas: dict[str, int] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        label, sep, n = line.rpartition("=")
        if not sep or not label.strip():
            raise SamplingError(f"quota line {number}: write it as 'stratum = n'", field="quotas")
        try:
            value = int(n.strip())
        except ValueError:
            raise SamplingError(
                f"quota line {number}: {n.strip()!r} is not a whole number", field="quotas"
            ) from None
        if label.strip() in quotas:
            raise SamplingError(
                f"quota line {number}: stratum {label.strip()!r} is given twice", field="quotas"
            )
        quotas[label.strip()] = value
    if not quotas:
        raise SamplingError("no quotas given", field="quotas")
    return quotas
