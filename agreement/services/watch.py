"""Refresh a study's agreement watch (agreement.stats.watch) from its clinician ratings, the
score table's (submitted and imported), in a worker: the dashboard shows the stored snapshot
and never computes it."""

from __future__ import annotations

import logging

import pandas as pd

from agreement.clinician_scores import clinician_ratings
from agreement.stats.watch import WATCH_COLUMNS, watch_summary
from annotation.models import AttentionCheck, CalibrationItem, RatingStudy
from annotation.services.watch import (
    record_watch_failure,
    record_watch_snapshot,
    start_watch_refresh,
)
from medhelm_site.common import task_names

logger = logging.getLogger(__name__)

REFRESH_WATCH_TASK = task_names.REFRESH_WATCH
#: Item-bootstrap resamples of the panel's interval (seeded: a refresh of the same ratings
#: gives the same interval).
WATCH_RESAMPLES = 1000
WATCH_SEED = 20240601


def watch_ratings(*, study_id: int) -> pd.DataFrame:
    """The clinician rows of the study's score table (agreement.clinician_scores.clinician_ratings:
    submitted and imported ratings with a value, under the report's clinician labels,
    attention checks and calibration items left out), ordered by when they came in."""
    study = RatingStudy.objects.get(pk=study_id)
    frame = clinician_ratings(study=study)
    return frame.loc[:, list(WATCH_COLUMNS)]


def refresh_watch(*, study_id: int) -> dict[str, object]:
    """Compute and store the study's watch snapshot; a failure is stored for the dashboard
    (the previous snapshot stays) and raised. A study deleted since the refresh was queued
    has nothing to refresh: skipped, and logged."""
    if not RatingStudy.objects.filter(pk=study_id).exists():
        logger.info("agreement watch of study %s skipped: the study no longer exists", study_id)
        return {"study": study_id, "skipped": "the study no longer exists"}
    submissions = start_watch_refresh(study_id=study_id)
    try:
        summary = watch_summary(
            watch_ratings(study_id=study_id), n_resamples=WATCH_RESAMPLES, seed=WATCH_SEED
        )
    except Exception as exc:
        logger.exception("agreement watch of study %s failed", study_id)
        record_watch_failure(study_id=study_id, reason=f"{type(exc).__name__}: {exc}")
        raise
    summary["attention_checks_excluded"] = AttentionCheck.objects.filter(study_id=study_id).count()
    summary["calibration_items_excluded"] = CalibrationItem.objects.filter(
        study_id=study_id
    ).count()
    record_watch_snapshot(study_id=study_id, summary=summary, submissions=submissions)
    return {"study": study_id, "submissions": submissions}
