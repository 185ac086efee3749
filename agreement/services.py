"""Report snapshots: compute a study's agreement report once, store every number with its
method, never change it. Recomputing makes a new snapshot linked to the old one, with what
moved.

A snapshot's results hold everything the page, the exports and the plots show (cells,
differences, leaderboard, coverage, per-item plot data), so reopening a report never reads
the ratings again. Raters appear by study pseudonym, judge name or metric key only.
"""

from __future__ import annotations

import csv
import hashlib
import io
import math
import platform
import secrets
from collections.abc import Mapping
from decimal import Decimal
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np
import pandas as pd
from django.contrib.auth.models import AbstractBaseUser
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone

from agreement import analysis, plots, selectors
from agreement.models import ReportSnapshot
from agreement.stats import package_versions
from annotation import audit
from annotation.models import RatingStudy

DEFAULT_PARAMETERS: dict[str, Any] = {
    "n_resamples": 1000,
    "confidence": 0.95,
    "ci_method": "bca",
    "values": "latest",
    "min_items": 3,
    "min_shared_items": 2,
}
MAX_RESAMPLES = 100_000
MAX_SEED = 2**32 - 1
#: Two numbers closer than this are the same (bootstrap sums agree to ~1e-15).
TOLERANCE = 1e-9
COMPARED_FIELDS = ("estimate", "ci_low", "ci_high", "n_items", "n_raters", "status")


# --------------------------------------------------------------------------------------------
# Parameters


def normalise_parameters(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """Defaults filled in, types checked, and a random seed drawn (and so recorded) when none
    is given. Raises ValidationError naming the field."""
    unknown = set(parameters) - {*DEFAULT_PARAMETERS, "seed", "title"}
    if unknown:
        raise ValidationError({k: "unknown parameter" for k in sorted(unknown)})
    p = {**DEFAULT_PARAMETERS, **{k: v for k, v in parameters.items() if v is not None}}
    errors: dict[str, str] = {}

    def as_int(key: str, low: int, high: int) -> None:
        try:
            value = int(p[key])
            if isinstance(p[key], float) and p[key] != value:
                raise ValueError
        except (TypeError, ValueError):
            errors[key] = "must be a whole number"
            return
        if not low <= value <= high:
            errors[key] = f"must be between {low} and {high}"
        p[key] = value

    as_int("n_resamples", 10, MAX_RESAMPLES)
    as_int("min_items", 2, 1000)
    as_int("min_shared_items", 2, 1000)
    if p.get("seed") in (None, ""):
        p["seed"] = secrets.randbelow(MAX_SEED + 1)
    as_int("seed", 0, MAX_SEED)
    try:
        p["confidence"] = float(p["confidence"])
        if not 0.5 <= p["confidence"] < 1:
            errors["confidence"] = "must be at least 0.5 and below 1"
    except (TypeError, ValueError):
        errors["confidence"] = "must be a number"
    if p["ci_method"] not in analysis.CI_METHODS:
        errors["ci_method"] = f"must be one of {sorted(analysis.CI_METHODS)}"
    if p["values"] not in ("latest", "first"):
        errors["values"] = "must be 'latest' or 'first'"
    p["title"] = str(p.get("title") or "").strip()[:300]
    if errors:
        raise ValidationError(errors)
    return p


# --------------------------------------------------------------------------------------------
# Computing


def jsonable(value: Any) -> Any:
    """numpy/pandas/Decimal values as plain JSON values; NaN and infinities as None."""
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, pd.DataFrame):
        return jsonable(value.to_dict("records"))
    if isinstance(value, list | tuple | set | np.ndarray | pd.Index):
        return [jsonable(v) for v in value]
    if isinstance(value, bool | np.bool_):
        return bool(value)
    if isinstance(value, int | np.integer):
        return int(value)
    if isinstance(value, float | np.floating | Decimal):
        f = float(value)
        return f if math.isfinite(f) else None
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, str):
        return value
    return str(value)


def canonical_hash(table: pd.DataFrame) -> str:
    """sha256 of the score table in a canonical form (sorted rows, fixed columns, shortest
    round-trip floats): the same scores always give the same hash."""
    cols = list(selectors.TABLE_COLUMNS)
    t = table.loc[:, cols].sort_values(["item", "criterion", "rater", "rater_kind"], kind="stable")
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(cols)
    for row in t.itertuples(index=False, name=None):
        writer.writerow(repr(v) if isinstance(v, float) else v for v in row)
    return hashlib.sha256(buf.getvalue().encode()).hexdigest()


def software_versions() -> dict[str, str]:
    out = {"python": platform.python_version(), **package_versions()}
    for name in ("django", "matplotlib"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:  # pragma: no cover
            out[name] = "not installed"
    return out


def compute_report(
    *, study: RatingStudy, parameters: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any], str]:
    """(results, method, input hash) for normalised ``parameters``; reads the study once."""
    data = selectors.score_data(study=study, values=parameters["values"])
    table = data.table
    comparison = analysis.comparison_table(
        table,
        n_resamples=parameters["n_resamples"],
        seed=parameters["seed"],
        confidence=parameters["confidence"],
        method=parameters["ci_method"],
        min_items=parameters["min_items"],
        min_shared_items=parameters["min_shared_items"],
    )
    board = analysis.leaderboard(table, data.calls)
    input_hash = canonical_hash(table)
    results = jsonable(
        {
            "study": {"id": study.pk, "name": study.name},
            "rows": comparison.rows,
            "columns": comparison.columns,
            "criteria": comparison.criteria,
            "cells": comparison.cells,
            "differences": comparison.differences,
            "leaderboard": {
                "by_model": board.by_model,
                "by_model_category": board.by_model_category,
                "win_rates_by_benchmark": board.win_rates_by_benchmark,
                "cost_by_judge": board.cost_by_judge,
                "notes": board.notes,
            },
            "coverage": data.coverage,
            "plot_data": analysis.plot_data(table, min_shared_items=parameters["min_shared_items"]),
        }
    )
    kinds = table.groupby("rater_kind")["rater"].nunique()
    method = jsonable(
        {
            "forms": {
                "machine_vs_clinicians": analysis.MACHINE_FORM,
                "clinician_clinician": analysis.PAIRWISE_FORM,
                "difference": analysis.DIFFERENCE_FORM,
                "names": "ICC(3,k) = ICC(C,k) (McGraw & Wong): two-way mixed, consistency, "
                "average of k = 2 'raters' (the machine's z-score and the mean of the "
                "clinicians' z-scores)",
            },
            "composite": "per rater and item, the mean over criteria (cannot-assess answers "
            "are left out of the mean and counted under coverage)",
            "standardisation": "z = (x - rater mean) / rater SD (ddof = 1), within rater, over "
            "the clinician-rated items of the row being analysed (each category or "
            "benchmark row on its own); a clinician with no SD there is left out of the cell",
            "pairwise_rule": analysis.PAIRWISE_RULE.format(n=parameters["min_shared_items"]),
            "jury_aggregate": "per item and criterion, the weight-averaged latest valid score "
            "of every judge; composite = mean over criteria",
            "per_criterion_metrics": "a metric has one overall value per item: per criterion "
            "it is compared with the clinicians' scores on that criterion",
            "ci_method": analysis.CI_METHODS[parameters["ci_method"]],
            "ci_method_key": parameters["ci_method"],
            "bootstrap": "items resampled with replacement; z-scores recomputed in every "
            "resample; every cell draws its resamples from the report seed; differences "
            "use the same resamples for both terms",
            "n_resamples": parameters["n_resamples"],
            "seed": parameters["seed"],
            "confidence": parameters["confidence"],
            "min_items": parameters["min_items"],
            "min_shared_items": parameters["min_shared_items"],
            "values": parameters["values"],
            "bands": "Koo & Li (2016) on the interval: < 0.5 poor, 0.5-0.75 moderate, "
            "0.75-0.9 good, >= 0.9 excellent",
            "n_items": {
                "study": data.coverage["n_items"],
                "rated_by_clinicians": data.coverage["n_items_rated"],
                "in_score_table": int(table["item"].nunique()),
            },
            "n_raters": {k: int(kinds.get(k, 0)) for k in ("clinician", "judge", "jury", "metric")},
            "package_versions": software_versions(),
            "created_at": timezone.now().isoformat(),
            "input_hash": input_hash,
        }
    )
    return results, method, input_hash


def _cell_index(results: Mapping[str, Any]) -> dict[tuple[str, ...], Mapping[str, Any]]:
    out: dict[tuple[str, ...], Mapping[str, Any]] = {}
    for c in results.get("cells", []):
        out[(c["section"], c["row_group"], c["row"], c["column"])] = c
    for d in results.get("differences", []):
        out[("difference", d["row_group"], d["row"], d["column"])] = d
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return abs(a - b) <= TOLERANCE * max(1.0, abs(a), abs(b))
    return a == b


def compare_results(
    *, previous: ReportSnapshot, results: Mapping[str, Any], input_hash: str, method: Mapping
) -> dict[str, Any]:
    """What changed from ``previous``: input, software, and every cell that moved."""
    old, new = _cell_index(previous.results), _cell_index(results)
    moved = []
    for key in [k for k in new if k in old]:
        changed = [f for f in COMPARED_FIELDS if not _same(old[key].get(f), new[key].get(f))]
        if not changed:
            continue
        a, b = old[key].get("estimate"), new[key].get("estimate")
        moved.append(
            {
                "section": key[0],
                "row_group": key[1],
                "row": key[2],
                "column": key[3],
                "change": ", ".join(changed),
                "previous": a,
                "current": b,
                "delta": b - a
                if isinstance(a, int | float) and isinstance(b, int | float)
                else None,
                "previous_status": old[key].get("status"),
                "current_status": new[key].get("status"),
            }
        )
    label = " / ".join
    return {
        "previous_snapshot": previous.pk,
        "input_changed": previous.input_hash != input_hash,
        "previous_input_hash": previous.input_hash,
        "software_changed": previous.method.get("package_versions")
        != method.get("package_versions"),
        "n_cells_compared": sum(1 for k in new if k in old),
        "n_cells_moved": len(moved),
        "added": [label(k) for k in new if k not in old],
        "removed": [label(k) for k in old if k not in new],
        "cells": moved,
    }


def create_snapshot(
    *,
    study: RatingStudy,
    actor: AbstractBaseUser | None,
    parameters: Mapping[str, Any],
    previous: ReportSnapshot | None = None,
) -> ReportSnapshot:
    """Compute the report now and store it; it never changes afterwards."""
    params = normalise_parameters(parameters)
    results, method, input_hash = compute_report(study=study, parameters=params)
    if previous is not None:
        results["changes"] = compare_results(
            previous=previous, results=results, input_hash=input_hash, method=method
        )
    title = params.pop("title") or f"Agreement report, {timezone.localtime():%Y-%m-%d %H:%M}"
    with transaction.atomic():
        snapshot = ReportSnapshot.objects.create(
            study=study,
            title=title,
            parameters=params,
            results=results,
            method=method,
            input_hash=input_hash,
            previous=previous,
            created_by=actor if actor is not None and actor.is_authenticated else None,
        )
        audit.record(
            actor=actor,
            action="report.recompute" if previous else "report.create",
            target=snapshot,
            study=study,
            after={
                "title": title,
                "parameters": params,
                "input_hash": input_hash,
                "previous": previous.pk if previous else None,
            },
        )
    # Read back what the database stored (PostgreSQL's jsonb returns floats of magnitude
    # >= 1e16 as integers with the same digits), so callers see exactly what reopening shows.
    snapshot.refresh_from_db()
    return snapshot


def recompute_snapshot(
    *, snapshot: ReportSnapshot, actor: AbstractBaseUser | None
) -> ReportSnapshot:
    """A new snapshot of the same study with the same parameters (and seed) on today's
    scores, linked to ``snapshot``, with a "changes" section."""
    base = snapshot.title.split(" (recomputed")[0]
    parameters = {
        **{k: v for k, v in snapshot.parameters.items() if k in {*DEFAULT_PARAMETERS, "seed"}},
        "title": f"{base} (recomputed {timezone.localtime():%Y-%m-%d %H:%M})",
    }
    return create_snapshot(
        study=snapshot.study, actor=actor, parameters=parameters, previous=snapshot
    )


# --------------------------------------------------------------------------------------------
# Exports (from the stored snapshot only)


def snapshot_header(snapshot: ReportSnapshot) -> dict[str, Any]:
    return {
        "title": snapshot.title,
        "report": snapshot.pk,
        "study": f"{snapshot.study.name} (#{snapshot.study_id})",
        "created_at": snapshot.created_at.isoformat(),
        "input_hash": snapshot.input_hash,
        "previous": snapshot.previous_id,
        "parameters": ", ".join(f"{k}={v}" for k, v in sorted(snapshot.parameters.items())),
    }


def export_json(snapshot: ReportSnapshot) -> dict[str, Any]:
    return {
        "report": {
            "id": snapshot.pk,
            "title": snapshot.title,
            "study": snapshot.study_id,
            "created_at": snapshot.created_at.isoformat(),
            "input_hash": snapshot.input_hash,
            "previous": snapshot.previous_id,
        },
        "parameters": snapshot.parameters,
        "method": snapshot.method,
        "results": snapshot.results,
    }


CSV_COLUMNS = ["report", *analysis.CELL_COLUMNS]


def export_csv(snapshot: ReportSnapshot) -> str:
    """The comparison in long format: Table 2 and per-criterion cells, then the differences
    (section "difference"), one row per cell."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    for c in snapshot.results.get("cells", []):
        writer.writerow({"report": snapshot.pk, **c})
    for d in snapshot.results.get("differences", []):
        writer.writerow(
            {
                "report": snapshot.pk,
                "section": "difference",
                "statistic": analysis.DIFFERENCE_FORM,
                "ci_method": snapshot.method.get("ci_method"),
                "confidence": snapshot.method.get("confidence"),
                "n_resamples": snapshot.method.get("n_resamples"),
                **d,
            }
        )
    return buf.getvalue()


def export_pdf(snapshot: ReportSnapshot) -> bytes:
    return plots.pdf_bytes(
        header=snapshot_header(snapshot), results=snapshot.results, method=snapshot.method
    )
