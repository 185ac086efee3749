"""Computing a report: the score table read once, every analysis run on it, and the results
and method turned into plain JSON values to store."""

from __future__ import annotations

import csv
import hashlib
import io
import math
import platform
from collections.abc import Callable, Mapping
from decimal import Decimal
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import numpy as np
import pandas as pd
from django.conf import settings
from django.utils import timezone

from agreement import analysis, selectors
from agreement.input_status import input_status
from agreement.stats import package_versions
from agreement.stats.medhelm import MACHINE_FITTED, MACHINE_FORMS
from annotation import selectors as annotation_selectors
from annotation.models import RatingStudy

#: What the method record says in words, the same for every report.
METHOD_TEXT = {
    "composite": "per rater and item, the mean over criteria (cannot-assess answers are left "
    "out of the mean and counted under coverage)",
    "standardisation": "z = (x - rater mean) / rater SD (ddof = 1), within rater, over the "
    "clinician-rated items of the row being analysed (each category or benchmark row on its "
    "own); a clinician with no SD there is left out of the cell",
    "jury_aggregate": "per item and criterion, the weight-averaged latest valid score of every "
    "judge; composite = mean over criteria; with a single judge the jury is that judge (one "
    "column); with three or more, each jury without one judge is built the same way and "
    "compared with the clinicians on all items (section jury_composition)",
    "per_criterion_metrics": "a metric has one overall value per item: per criterion it is "
    "compared with the clinicians' scores on that criterion",
    "bootstrap": "items resampled with replacement; z-scores recomputed in every resample; "
    "every cell draws its resamples from the report seed; differences use the same resamples "
    f"for both terms; {analysis.BCA_ACCELERATION}",
    "bands": "Koo & Li (2016) on the interval: < 0.5 poor, 0.5-0.75 moderate, 0.75-0.9 good, "
    ">= 0.9 excellent",
    "sensitivity": "the all-items figures are also given without the estimability rule "
    f"({analysis.WITHOUT_RULE})",
}
#: What a report says about judge verdicts flagged as possibly steered by the evaluated
#: response (jury.verdict_flags), by its exclude_flagged parameter.
FLAGGED_VERDICTS_TEXT = {
    False: "included (the default): judge scores from flagged verdicts are in the table and "
    "the jury; the coverage counts them per judge",
    True: "excluded: judge scores from flagged verdicts are dropped (no older score of the "
    "judge stands in) and the jury is built without them; the coverage counts them per judge",
}
FORM_NAMES = (
    "ICC(3,k) = ICC(C,k) (McGraw & Wong): two-way mixed, consistency, average of k = 2 "
    "'raters' (the machine's z-score and the mean of the clinicians' z-scores)"
)
RECORDED_PARAMETERS = (
    "n_resamples",
    "seed",
    "confidence",
    "min_items",
    "min_shared_items",
    "max_ci_width",
    "values",
    "exclude_flagged",
    "clinician_form",
)


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
    round-trip floats): the same scores always give the same hash.

    A fingerprint, not an export: it keeps its own plain csv writer, because the export
    writer's formula quoting would change the bytes (and so every stored hash)."""
    cols = list(selectors.TABLE_COLUMNS)
    t = table.loc[:, cols].sort_values(["item", "criterion", "rater", "rater_kind"], kind="stable")
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(cols)
    # columns as Python values in one pass each (the csv module writes a float as its repr,
    # as the fingerprint always did), not a tuple and a generator per row
    writer.writerows(zip(*(t[c].tolist() for c in cols), strict=True))
    return hashlib.sha256(buf.getvalue().encode()).hexdigest()


def software_versions() -> dict[str, str]:
    """Python and the versions of every package a report's numbers depend on."""
    out = {"python": platform.python_version(), **package_versions()}
    # pingouin is the reference the ICC forms are checked against (the methods paragraph says so)
    for name in ("django", "matplotlib", "pingouin"):
        try:
            out[name] = version(name)
        except PackageNotFoundError:  # pragma: no cover
            out[name] = "not installed"
    return out


def settings_of(parameters: Mapping[str, Any]) -> analysis.Settings:
    """The analysis settings (and so the estimability rule) of normalised ``parameters``."""
    return analysis.Settings(
        n_resamples=parameters["n_resamples"],
        seed=parameters["seed"],
        confidence=parameters["confidence"],
        method=parameters["ci_method"],
        min_items=parameters["min_items"],
        min_shared_items=parameters["min_shared_items"],
        max_ci_width=parameters["max_ci_width"],
        clinician_form=parameters["clinician_form"],
    )


#: progress(stage, cells_done, cells_total): what a report being computed is doing now.
Progress = Callable[[str, int, int], None]
STAGE_READING = "reading the scores"
STAGE_CELLS = "bootstrapping Table 2 and the per-criterion cells"
STAGE_SUMMARIES = "leaderboard and figure data"


def ignore_progress(stage: str, done: int, total: int) -> None:
    return None


def _results(
    study: RatingStudy,
    data: selectors.ScoreData,
    parameters: Mapping[str, Any],
    progress: Progress = ignore_progress,
) -> dict[str, Any]:
    """Everything the page, the exports and the plots show, as plain JSON values."""
    table = data.table
    s = settings_of(parameters)
    comparison = analysis.comparison_table(
        table,
        n_resamples=s.n_resamples,
        seed=s.seed,
        confidence=s.confidence,
        method=s.method,
        min_items=s.min_items,
        min_shared_items=s.min_shared_items,
        max_ci_width=s.max_ci_width,
        clinician_form=s.clinician_form,
        judge_weights=data.judge_weights,
        progress=lambda done, total: progress(STAGE_CELLS, done, total),
        workers=settings.AGREEMENT_REPORT_PROCESSES,
    )
    progress(STAGE_SUMMARIES, len(comparison.cells), len(comparison.cells))
    board = analysis.leaderboard(table, data.calls)
    return jsonable(
        {
            "study": {"id": study.pk, "name": study.name},
            "rows": comparison.rows,
            "columns": comparison.columns,
            "criteria": comparison.criteria,
            "cells": comparison.cells,
            "differences": comparison.differences,
            "jury": comparison.jury,
            "sensitivity": {
                "entries": comparison.sensitivity.entries,
                "line": comparison.sensitivity.line,
            },
            "leaderboard": {
                "by_model": board.by_model,
                "by_model_category": board.by_model_category,
                "win_rates_by_benchmark": board.win_rates_by_benchmark,
                "cost_by_judge": board.cost_by_judge,
                "notes": board.notes,
            },
            "coverage": data.coverage,
            "plot_data": analysis.plot_data(table, rule=s.rule),
        }
    )


def _method(
    study: RatingStudy,
    data: selectors.ScoreData,
    parameters: Mapping[str, Any],
    input_hash: str,
) -> dict[str, Any]:
    """Forms, n items, n raters, CI method, seed and package versions, as plain JSON values."""
    table = data.table
    s = settings_of(parameters)
    kinds = table.groupby("rater_kind")["rater"].nunique()
    return jsonable(
        {
            "forms": {
                "machine_vs_clinicians": analysis.MACHINE_FORM,
                "machine_vs_clinicians_fitted": MACHINE_FORMS[MACHINE_FITTED],
                "clinician_clinician": analysis.clinician_form_rule(s.clinician_form),
                "difference": analysis.DIFFERENCE_FORM,
                "alpha": analysis.ALPHA_FORM,
                "names": FORM_NAMES,
            },
            "composite": METHOD_TEXT["composite"],
            "standardisation": METHOD_TEXT["standardisation"],
            "pairwise_rule": s.pairwise_rule(),
            "estimability": s.rule.as_record(confidence=s.confidence),
            "jury_aggregate": METHOD_TEXT["jury_aggregate"],
            "flagged_verdicts": FLAGGED_VERDICTS_TEXT[parameters["exclude_flagged"]],
            "per_criterion_metrics": METHOD_TEXT["per_criterion_metrics"],
            "ci_method": analysis.CI_METHODS[parameters["ci_method"]],
            "ci_method_key": parameters["ci_method"],
            "bootstrap": METHOD_TEXT["bootstrap"],
            "intervals": s.interval_record(),
            **{key: parameters[key] for key in RECORDED_PARAMETERS},
            "bands": METHOD_TEXT["bands"],
            "sensitivity": METHOD_TEXT["sensitivity"],
            "n_items": {
                "study": data.coverage["n_items"],
                "rated_by_clinicians": data.coverage["n_items_rated"],
                "in_score_table": int(table["item"].nunique()),
            },
            "attention_checks_excluded": data.coverage.get("attention_checks_excluded", 0),
            # calibration items (left out like the checks) and each rater's agreement with
            # their reference, values as first submitted
            "calibration": annotation_selectors.calibration_record(study=study),
            "n_raters": {k: int(kinds.get(k, 0)) for k in ("clinician", "judge", "jury", "metric")},
            # the draw in force: which items clinicians were dealt (None: all of them)
            "sample": annotation_selectors.sample_record(study=study),
            "package_versions": software_versions(),
            "created_at": timezone.now().isoformat(),
            "input_hash": input_hash,
        }
    )


def compute_report(
    *, study: RatingStudy, parameters: Mapping[str, Any], progress: Progress = ignore_progress
) -> tuple[dict[str, Any], dict[str, Any], str]:
    """(results, method, input hash) for normalised ``parameters``; reads the study once.
    ``progress`` hears of each stage and of the bootstrapped cells as they are done."""
    progress(STAGE_READING, 0, 0)
    data = selectors.score_data(
        study=study, values=parameters["values"], exclude_flagged=parameters["exclude_flagged"]
    )
    input_hash = canonical_hash(data.table)
    results = _results(study, data, parameters, progress)
    # What the machine scores stood at when this was computed (the page shows it in the header).
    results["computed_on"] = jsonable(input_status(study=study))
    return results, _method(study, data, parameters, input_hash), input_hash
