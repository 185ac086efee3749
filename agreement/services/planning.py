"""Planning a rating study: the sample-size questions (answered at once, pure arithmetic) and
the design simulation, run here (the command, or the page when
settings.AGREEMENT_REPORTS_IN_BACKGROUND is off) or queued for a worker
(agreement.services.simulations). A plan writes nothing: the page keeps a sample-size
question's inputs in its URL."""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from agreement.stats.planning import (
    SampleSize,
    bonett_items,
    bonett_width,
    difference_items,
    exact_items,
    exact_power,
    walter_items,
)
from agreement.stats.planning_sim import DesignSpec, simulate_design, validate

#: The worker's progress (the PROGRESS state) is written every this many simulated studies.
PROGRESS_EVERY_STUDIES = 50


@dataclass(frozen=True)
class PlanAnswer:
    """The items needed, by each route that applies, with a line on what it means.

    An item is one model output; ``raters_per_item`` clinicians rate each, so the study
    collects ``ratings`` item ratings (each scoring every criterion of the rubric)."""

    sizes: tuple[SampleSize, ...]
    summary: str
    raters_per_item: int

    @property
    def n_items(self) -> int:
        return self.sizes[0].n_items

    @property
    def ratings(self) -> int:
        return self.n_items * self.raters_per_item


def in_cases(*, n_items: int, n_models: int) -> str:
    """The planned items in the unit the sample page draws in (cases, each answered by every
    model of the study); "" when the study has fewer than two models (a case is an item)."""
    if n_models < 2:
        return ""
    pooled = math.ceil(n_items / n_models)
    return (
        f"The sample page draws paired cases, each bringing the outputs of this study's "
        f"{n_models} models: {n_items} items in all are {pooled} cases ({pooled * n_models} "
        f"items); {n_items} items of each model (an ICC per model) are {n_items} cases "
        f"({n_items * n_models} items). Outputs to one case tend to be alike, so items pooled "
        f"from fewer cases tell less than the formula assumes."
    )


def answer(question: str, data: Mapping[str, Any]) -> PlanAnswer:
    """Answer a sample-size question from cleaned form data. Raises PlanningInputError."""
    if question == "precision":
        size = bonett_items(
            data["rho"],
            data["k"],
            data["width"],
            confidence=data["confidence"],
            small_k_correction=data.get("small_k_correction", True),
        )
        expected = bonett_width(data["rho"], data["k"], size.n_items, confidence=data["confidence"])
        return PlanAnswer(
            (size,),
            f"{size.n_items} items, each rated by {data['k']} raters, give a "
            f"{data['confidence']:.0%} interval of width about {expected:.3f} around an ICC(1) "
            f"of {data['rho']:g} (about half the studies will see a wider one).",
            data["k"],
        )
    if question == "power":
        args = (data["rho0"], data["rho1"], data["k"])
        kw = {"alpha": data["alpha"], "power": data["power"], "tails": data["tails"]}
        walter = walter_items(*args, **kw)
        exact = exact_items(*args, **kw)
        achieved = exact_power(*args, walter.n_items, alpha=data["alpha"], tails=data["tails"])
        return PlanAnswer(
            (walter, exact),
            f"{walter.n_items} items (Walter et al.) with {data['k']} raters each give an exact "
            f"power of {achieved:.3f} to show the ICC above {data['rho0']:g} when it is "
            f"{data['rho1']:g}; the exact F test needs {exact.n_items}.",
            data["k"],
        )
    if question == "difference":
        size = difference_items(
            data["rho_low"],
            data["difference"],
            k_low=data["k_low"],
            k_high=data["k_high"],
            alpha=data["alpha"],
            power=data["power"],
            tails=data["tails"],
        )
        return PlanAnswer(
            (size,),
            f"About {size.n_items} items to show, with power {data['power']:g}, an ICC of "
            f"{data['rho_low'] + data['difference']:g} ({data['k_high']} per item) above one of "
            f"{data['rho_low']:g} ({data['k_low']} per item). An approximation: simulate the "
            "design to check it.",
            data["k_low"],
        )
    raise ValueError(f"unknown planning question {question!r}")


def design_spec(data: Mapping[str, Any]) -> DesignSpec:
    """A DesignSpec from cleaned form (or command) data, checked. Raises PlanningInputError."""
    spec = DesignSpec(**{name: data[name] for name in DesignSpec.__dataclass_fields__})
    validate(spec)
    return spec


def run_simulation(
    spec: DesignSpec,
    *,
    study_id: int,
    progress: Callable[[int, int], None] | None = None,
    progress_every: int = PROGRESS_EVERY_STUDIES,
) -> dict[str, Any]:
    """Simulate and return a JSON-able result, with the study it belongs to and its runtime."""
    started = time.perf_counter()
    result = simulate_design(spec, progress=progress, progress_every=progress_every)
    out = result.as_dict()
    out["study_id"] = study_id
    out["seconds"] = round(time.perf_counter() - started, 3)
    return out
