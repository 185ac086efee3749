"""Refresh a study's agreement watch (agreement.stats.watch) from its submitted clinician
ratings, in a worker: the dashboard shows the stored snapshot and never computes it."""

from __future__ import annotations

import logging

import pandas as pd

from agreement.stats.watch import WATCH_COLUMNS, watch_summary
from annotation.models import (
    Assignment,
    AttentionCheck,
    CalibrationItem,
    Rating,
    RatingStudy,
    StudyMembership,
)
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
    """One row per submitted clinician rating with a value (cannot-assess answers have
    none), raters by pseudonym, ordered by the assignment's first submission; attention
    checks and calibration items left out."""
    pseudonyms = dict(
        StudyMembership.objects.filter(
            study_id=study_id, role=StudyMembership.Role.CLINICIAN
        ).values_list("user_id", "pseudonym")
    )
    rows = Rating.objects.filter(
        assignment__study_id=study_id,
        assignment__status=Assignment.Status.SUBMITTED,
        value__isnull=False,
        # attention checks are planted items with an obvious answer: no part of agreement
        assignment__item__attention_check__isnull=True,
        # calibration items are rated by every rater against a reference: no part either
        assignment__item__calibration_item__isnull=True,
    ).values_list(
        "assignment__item_id",
        "criterion__key",
        "assignment__clinician_id",
        "value",
        "assignment__first_submitted_at",
    )
    frame = pd.DataFrame(
        [(i, c, pseudonyms.get(u, f"user {u}"), float(v), t) for i, c, u, v, t in rows],
        columns=list(WATCH_COLUMNS),
    )
    return frame.sort_values("submitted_at", kind="stable").reset_index(drop=True)


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
