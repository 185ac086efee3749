"""Reads for agreement: the one long score table of a study, its coverage, and call costs.

Every analysis starts from :func:`score_data` (DESIGN.md "One score table"): columns
``item, criterion, rater, rater_kind, value`` plus ``model, benchmark, category``, built with
a fixed number of queries whatever the study's size. Clinicians appear by study pseudonym
only; a judge by its latest valid score; the jury as the judges' weighted mean; a metric
under the criterion "overall". What the table leaves out is counted in the coverage.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd
from django.db.models import Exists, OuterRef, Q, QuerySet

from agreement.clinician_scores import ClinicianScores, clinician_scores
from agreement.coverage import coverage_of
from agreement.errors import AgreementError
from agreement.item_frame import items_frame
from agreement.models import ReportJob, ReportSnapshot
from agreement.raw_rows import JsonTexts, raw_rows
from annotation.models import (
    RatingStudy,
    StudyMembership,
)
from jury.models import Judge, JudgeCall, JudgeScore, MetricScore

ValueChoice = Literal["latest", "first"]

JURY_RATER = "jury"
METRIC_CRITERION = "overall"
TABLE_COLUMNS = (
    "item",
    "criterion",
    "rater",
    "rater_kind",
    "value",
    "model",
    "benchmark",
    "category",
)
CALL_COLUMNS = (
    "item",
    "model",
    "judge",
    "status",
    "cached",
    "input_tokens",
    "output_tokens",
    "cost",
    "price_input_per_mtok",
    "price_output_per_mtok",
    "max_output_tokens",
)
#: The default a judge call uses when the judge's params set no max_tokens (jury.execution).
DEFAULT_MAX_OUTPUT_TOKENS = 1024


@dataclass(frozen=True)
class ScoreData:
    """The score table of a study and what it leaves out."""

    table: pd.DataFrame  # TABLE_COLUMNS, sorted by item, criterion, rater
    items: pd.DataFrame  # item, external_id, model, benchmark, category (every study item)
    criteria: list[str]  # rubric criterion keys in rubric order
    calls: pd.DataFrame = field(repr=False)  # CALL_COLUMNS, one row per judge call
    coverage: dict[str, Any] = field(default_factory=dict)
    #: judge rater label -> the weight the jury gives it (for leave-one-judge-out juries)
    judge_weights: dict[str, float] = field(default_factory=dict)


def _unique_labels(labels: dict[str, set[str]]) -> dict[tuple[str, str], str]:
    """(kind, label) -> label, prefixed with the kind where two kinds share a label."""
    counts = Counter(label for names in labels.values() for label in names)
    return {
        (kind, label): label if counts[label] == 1 else f"{kind}:{label}"
        for kind, names in labels.items()
        for label in names
    }


@dataclass
class _JudgeScores:
    rows: list[tuple[int, str, str, float]]  # item, criterion, judge name, value
    jury: list[tuple[int, str, float]]  # item, criterion, weighted mean over judges
    invalid: Counter[str]  # judge name -> invalid scores
    flagged: Counter[str]  # judge name -> items whose verdict is flagged (jury.verdict_flags)
    weights: dict[str, float] = field(default_factory=dict)  # judge name -> jury weight


def _judge_scores(study: RatingStudy, *, exclude_flagged: bool = False) -> _JudgeScores:
    """Each judge's latest valid score (highest id) per item and criterion, and the jury:
    their weighted mean. Invalid scores are counted, not rows. A score from a flagged verdict
    (its call's flags, or an imported score's own) is counted per judge and item, and with
    `exclude_flagged` dropped (no older score stands in for it), before the jury is built.
    One query."""
    scores = raw_rows(
        JudgeScore.objects.filter(item__study=study)
        .order_by("pk")
        .values_list(
            "item_id",
            "criterion__key",
            "judge_id",
            "judge__name",
            "judge__weight",
            "value",
            "is_valid",
            "call__flags",
            "flags",
        )
    )
    texts = JsonTexts()
    latest: dict[tuple[int, str, int], tuple[float, float, str, bool]] = {}
    invalid: Counter[str] = Counter()
    for item_id, key, judge_id, name, weight, value, valid, call_flags, flags in scores:
        if valid and value is not None:
            flagged = bool(texts.value(call_flags) or texts.value(flags))
            latest[(item_id, key, judge_id)] = (float(value), float(weight), name, flagged)
        else:
            invalid[name] += 1
    flagged_items: set[tuple[str, int]] = set()
    sums: dict[tuple[int, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    rows = []
    for (item_id, key, _judge), (value, weight, name, flagged) in latest.items():
        if flagged:
            flagged_items.add((name, item_id))
            if exclude_flagged:
                continue
        rows.append((item_id, key, name, value))
        acc = sums[(item_id, key)]
        acc[0] += weight * value
        acc[1] += weight
    jury = [(i, c, acc[0] / acc[1]) for (i, c), acc in sums.items()]
    flagged_per_judge = Counter(name for name, _item in flagged_items)
    weights = {name: weight for (_v, weight, name, _f) in latest.values()}
    return _JudgeScores(
        rows=rows, jury=jury, invalid=invalid, flagged=flagged_per_judge, weights=weights
    )


def _metric_scores(study: RatingStudy) -> list[tuple[int, str, float]]:
    """(item, metric label, value): the metric's key, with "@scorer" where one metric was
    computed by more than one scorer model. One query."""
    rows = list(
        MetricScore.objects.filter(item__study=study)
        .order_by("pk")
        .values_list("item_id", "metric", "scorer_model", "value")
    )
    scorers: dict[str, set[str]] = defaultdict(set)
    for _item, metric, scorer, _value in rows:
        scorers[metric].add(scorer)

    def label(metric: str, scorer: str) -> str:
        return metric if len(scorers[metric]) == 1 else f"{metric}@{scorer or 'default'}"

    return [(i, label(m, s), v) for i, m, s, v in rows]


def _labels(
    clinicians: ClinicianScores, judges: _JudgeScores, metrics: list[tuple[int, str, float]]
) -> dict[tuple[str, str], str]:
    return _unique_labels(
        {
            "clinician": {r[2] for r in clinicians.rows},
            "judge": {r[2] for r in judges.rows},
            "jury": {JURY_RATER} if judges.jury else set(),
            "metric": {m for _i, m, _v in metrics},
        }
    )


def _long_table(
    items: pd.DataFrame,
    clinicians: ClinicianScores,
    judges: _JudgeScores,
    metrics: list[tuple[int, str, float]],
    labels: dict[tuple[str, str], str],
) -> pd.DataFrame:
    """Every kind's rows under unique rater labels, with the item attributes, sorted."""
    records = [(i, c, labels[("clinician", r)], "clinician", v) for i, c, r, v in clinicians.rows]
    records += [(i, c, labels[("judge", r)], "judge", v) for i, c, r, v in judges.rows]
    records += [(i, c, labels[("jury", JURY_RATER)], "jury", v) for i, c, v in judges.jury]
    records += [
        (i, METRIC_CRITERION, labels[("metric", m)], "metric", float(v)) for i, m, v in metrics
    ]
    table = pd.DataFrame(records, columns=["item", "criterion", "rater", "rater_kind", "value"])
    table = table.astype({"item": "int64", "value": "float64"})
    table = table.merge(items[["item", "model", "benchmark", "category"]], on="item", how="left")
    table = table.sort_values(["item", "criterion", "rater"], kind="stable").reset_index(drop=True)
    return table.loc[:, list(TABLE_COLUMNS)]


def score_data(
    *,
    study: RatingStudy,
    values: ValueChoice = "latest",
    min_rater_items: int = 2,
    exclude_flagged: bool = False,
) -> ScoreData:
    """The study's long score table with item attributes, criteria, calls and coverage.

    ``values="first"`` takes each clinician rating as first submitted, "latest" as it stands.
    ``exclude_flagged`` drops judge scores from flagged verdicts (jury.verdict_flags) and
    builds the jury without them; by default they are in, and counted in the coverage.
    Always nine queries.
    """
    if values not in ("latest", "first"):
        raise AgreementError(f"values must be 'latest' or 'first', got {values!r}", field="values")
    items, checks, calibration = items_frame(study=study)
    left_out = checks | calibration
    criteria = list(study.criteria.order_by("position", "pk").values_list("key", flat=True))
    clinicians = clinician_scores(study=study, first=values == "first", leave_out=left_out)
    judges = _judge_scores(study, exclude_flagged=exclude_flagged)
    metrics = _metric_scores(study)
    labels = _labels(clinicians, judges, metrics)
    table = _long_table(items, clinicians, judges, metrics, labels)
    # Judge and metric scores of attention checks and calibration items go too: they are no
    # part of any statistic (the method section says how many there were).
    table = table.loc[~table["item"].isin(left_out)].reset_index(drop=True)
    calls = _calls_frame(study, items)
    coverage = coverage_of(
        table=table,
        items=items,
        calls=calls,
        cannot_assess=clinicians.cannot_assess,
        missing=clinicians.missing,
        invalid=judges.invalid,
        min_rater_items=min_rater_items,
        flagged=judges.flagged,
        exclude_flagged=exclude_flagged,
        attention_checks_excluded=len(checks),
        calibration_items_excluded=len(calibration),
    )
    weights = {
        labels[("judge", name)]: w
        for name, w in judges.weights.items()
        if ("judge", name) in labels
    }
    return ScoreData(
        table=table,
        items=items,
        criteria=criteria,
        calls=calls,
        coverage=coverage,
        judge_weights=weights,
    )


def score_table(*, study: RatingStudy, values: ValueChoice = "latest") -> pd.DataFrame:
    """The long score table (see :func:`score_data`), coverage in ``attrs["coverage"]``."""
    data = score_data(study=study, values=values)
    table = data.table
    table.attrs["coverage"] = data.coverage
    return table


def _calls_frame(study: RatingStudy, items: pd.DataFrame) -> pd.DataFrame:
    """One row per judge call of the study (every run): status, tokens, cost, prices."""
    model_of = dict(zip(items["item"], items["model"], strict=True))
    rows = []
    texts = JsonTexts()
    for item_id, name, status, cached, tin, tout, cost, p_in, p_out, params in raw_rows(
        JudgeCall.objects.filter(item__study=study)
        .order_by("pk")
        .values_list(
            "item_id",
            "judge__name",
            "status",
            "cached_from_id",
            "input_tokens",
            "output_tokens",
            "cost",
            "judge__price_input_per_mtok",
            "judge__price_output_per_mtok",
            "judge__params",
        )
    ):
        max_out = (texts.value(params) or {}).get("max_tokens", DEFAULT_MAX_OUTPUT_TOKENS)
        rows.append(
            (
                item_id,
                model_of.get(item_id, ""),
                name,
                status,
                cached is not None,
                tin,
                tout,
                None if cost is None else float(cost),
                float(p_in),
                float(p_out),
                int(max_out),
            )
        )
    frame = pd.DataFrame(rows, columns=list(CALL_COLUMNS))
    return frame.astype({"input_tokens": "float64", "output_tokens": "float64", "cost": "float64"})


# Report snapshots


def study_snapshots(*, study: RatingStudy) -> QuerySet[ReportSnapshot]:
    """A study's snapshots, newest first, without their (large) results and method."""
    return (
        ReportSnapshot.objects.filter(study=study)
        .defer("results", "method")
        .order_by("-created_at", "-id")
    )


def study_snapshot(
    *, study: RatingStudy, report_id: int, with_results: bool = True
) -> ReportSnapshot | None:
    """One snapshot of `study`, or None (also for a snapshot of another study). Without
    results and method (the large columns, loaded only if read) for the stored renderings."""
    snapshots = ReportSnapshot.objects.filter(study=study, pk=report_id)
    if not with_results:
        snapshots = snapshots.defer("results", "method")
    return snapshots.first()


def open_and_failed_jobs(*, study: RatingStudy, limit: int = 20) -> list[ReportJob]:
    """A study's report jobs that did not end in a snapshot (queued, running, failed),
    newest first, for the reports page."""
    return list(
        ReportJob.objects.filter(study=study)
        .exclude(status=ReportJob.Status.FINISHED)
        .order_by("-created_at", "-id")[:limit]
    )


def study_job(*, study: RatingStudy, job_id: int) -> ReportJob | None:
    """One report job of `study`, or None (also for a job of another study)."""
    return ReportJob.objects.filter(study=study, pk=job_id).first()


def job_state(job: ReportJob) -> dict[str, object]:
    """What the job page and the API say about a job, as plain JSON values."""
    total = job.cells_total
    return {
        "id": job.pk,
        "title": job.title,
        "status": job.status,
        "stage": job.stage,
        "cells_done": job.cells_done,
        "cells_total": total,
        "resamples_per_cell": int(job.parameters.get("n_resamples") or 0),
        "resamples_done": job.resamples_done,
        "resamples_total": job.resamples_total,
        "percent": round(100 * job.cells_done / total) if total else 0,
        "error": job.error,
        "snapshot": job.snapshot_id,
        "created_at": job.created_at.isoformat() if job.created_at else None,
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "heartbeat_at": job.heartbeat_at.isoformat() if job.heartbeat_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
    }


def recomputation_ids(*, snapshot: ReportSnapshot) -> list[int]:
    """Ids of the snapshots recomputed from `snapshot`, oldest first."""
    return list(snapshot.recomputations.order_by("created_at", "id").values_list("pk", flat=True))


def member_pseudonyms(*, study: RatingStudy) -> dict[int, str]:
    """user id -> a study pseudonym (any role), for "created by" without names."""
    out: dict[int, str] = {}
    members = StudyMembership.objects.filter(study=study).exclude(pseudonym="").order_by("role")
    for user_id, pseudonym in members.values_list("user_id", "pseudonym"):
        out.setdefault(user_id, pseudonym)
    return out


def judges_with_notes(*, study: RatingStudy) -> list[Judge]:
    """The judges called on, or scoring, the study's items whose description says what
    readers of their scores should know (e.g. the demo's pipeline check), by name."""
    # Only the few judges with a note are looked for in the study's calls and scores (an
    # EXISTS each), rather than every call and score of the study read for their judge: this
    # is on every report page, and a MedHELM-sized study has tens of thousands of scores.
    noted = Judge.objects.exclude(description="")
    if not noted.exists():  # the usual case: one query on the small judge table
        return []
    called = JudgeCall.objects.filter(run__study=study, judge=OuterRef("pk"))
    scored = JudgeScore.objects.filter(item__study=study, judge=OuterRef("pk"))
    return list(noted.filter(Q(Exists(called)) | Q(Exists(scored))).order_by("name"))
