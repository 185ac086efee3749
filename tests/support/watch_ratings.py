"""Clinicians rate a study through the rating service, one of them planted lenient: each
value is the item's quality (drawn per item) plus noise, plus a bias for the planted rater."""

from __future__ import annotations

import numpy as np

from annotation import services
from annotation.models import Assignment, RatingStudy, StudyMembership


def submit_panel_ratings(
    *,
    study: RatingStudy,
    lenient_user_id: int | None,
    bias: float = 1.3,
    seed: int = 5,
    limit: int | None = None,
) -> int:
    """Submit every (or the first ``limit``) open assignment of the study, in queue order
    interleaved across clinicians; return how many were submitted."""
    rng = np.random.default_rng(seed)
    criteria = list(study.criteria.values_list("key", flat=True))
    items = sorted(set(Assignment.objects.filter(study=study).values_list("item_id", flat=True)))
    quality = dict(zip(items, rng.uniform(1.6, 3.7, len(items)), strict=True))
    open_ = Assignment.objects.filter(study=study).exclude(
        status__in=[Assignment.Status.SUBMITTED, Assignment.Status.WITHDRAWN]
    )
    assignments = sorted(open_.select_related("clinician"), key=lambda a: (a.position, a.pk))
    done = 0
    for a in assignments[:limit]:
        shift = bias if a.clinician_id == lenient_user_id else 0.0
        answers = {
            key: services.CriterionAnswer(
                value=int(np.clip(np.rint(quality[a.item_id] + shift + rng.normal(0, 0.45)), 1, 5))
            )
            for key in criteria
        }
        services.submit_assignment(assignment_id=a.pk, clinician=a.clinician, answers=answers)
        done += 1
    return done


def pseudonym_of(study: RatingStudy, user_id: int) -> str:
    return StudyMembership.objects.get(study=study, user_id=user_id).pseudonym
