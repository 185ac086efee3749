"""The clinicians' rows of the score table (agreement.selectors.score_data): submitted
ratings, as first submitted or as they stand, and imported ratings, under the clinician
labels of annotation.selectors.raters; and the same rows with when each came in, which the
agreement watch reads, so that the watch and the reports count the same ratings."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

import pandas as pd

from agreement.item_frame import items_frame
from annotation.models import Assignment, ImportedRating, Rating, RatingStudy
from annotation.selectors.raters import clinician_labels


@dataclass
class ClinicianScores:
    rows: list[tuple[int, str, str, float]]  # item, criterion, label, value
    cannot_assess: Counter[tuple[str, str]]  # (label, criterion) -> answers
    missing: int
    #: when each row's rating came in, parallel to rows: the assignment's first submission,
    #: or an imported rating's import
    times: list[datetime | None] = field(default_factory=list)


def clinician_scores(
    *, study: RatingStudy, first: bool, leave_out: set[int] = frozenset()
) -> ClinicianScores:
    """Submitted ratings by clinician label (never a name: annotation's clinician_labels),
    as first submitted or as they stand, and imported ratings. Cannot-assess answers and
    missing values are counted, not rows. Items in `leave_out` (attention checks) give
    neither. Three queries."""
    labels = clinician_labels(study_id=study.pk)
    ratings = Rating.objects.filter(
        assignment__study=study, assignment__status=Assignment.Status.SUBMITTED
    ).values_list(
        "assignment__item_id",
        "criterion__key",
        "assignment__clinician_id",
        "value",
        "cannot_assess",
        "first_value",
        "first_cannot_assess",
        "assignment__first_submitted_at",
    )
    out = ClinicianScores(rows=[], cannot_assess=Counter(), missing=0)
    for item_id, key, user_id, value, ca, first_value, first_ca, submitted_at in ratings:
        if item_id in leave_out:
            continue
        rater = labels[user_id]
        v, unable = (first_value, bool(first_ca)) if first else (value, ca)
        if unable:
            out.cannot_assess[(rater, key)] += 1
        elif v is None:
            out.missing += 1
        else:
            out.rows.append((item_id, key, rater, float(v)))
            out.times.append(submitted_at)
    # Ratings imported from a long file count as submitted ones (first = latest for them).
    imported = ImportedRating.objects.filter(study=study).values_list(
        "item_id", "criterion__key", "rater__pseudonym", "value", "created_at"
    )
    for item_id, key, rater, v, imported_at in imported:
        if item_id not in leave_out:
            out.rows.append((item_id, key, rater, float(v)))
            out.times.append(imported_at)
    return out


CLINICIAN_RATING_COLUMNS = ("item", "criterion", "rater", "value", "submitted_at")


def clinician_ratings(*, study: RatingStudy) -> pd.DataFrame:
    """The clinician rows of the score table as they stand (score_data's, under the same
    labels and the same rules: submitted and imported ratings with a value, attention checks
    and calibration items left out), with when each came in (`submitted_at`: the first
    submission, or the import), in that order. For the agreement watch. Five queries."""
    _items, checks, calibration = items_frame(study=study)
    scores = clinician_scores(study=study, first=False, leave_out=checks | calibration)
    frame = pd.DataFrame(
        [(*row, at) for row, at in zip(scores.rows, scores.times, strict=True)],
        columns=list(CLINICIAN_RATING_COLUMNS),
    )
    frame = frame.astype({"value": "float64"})
    return frame.sort_values("submitted_at", kind="stable").reset_index(drop=True)
