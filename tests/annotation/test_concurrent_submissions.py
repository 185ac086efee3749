"""Many submissions at once never double or lose a rating (needs real concurrency: PostgreSQL)."""

from __future__ import annotations

import functools
from collections import Counter

import pytest
from django.db import connection

from annotation import services
from annotation.models import Assignment, Rating
from tests.factories import make_study_with_members
from tests.support.threads import run_in_threads

A = services.CriterionAnswer


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_twenty_threads_leave_exactly_one_rating_per_assignment_and_criterion():
    if connection.vendor != "postgresql":
        pytest.skip(
            "row locks and concurrent writers need PostgreSQL; CI runs this with DATABASE_URL set"
        )
    setup = make_study_with_members(n_items=20, n_clinicians=2, k=2)
    clinician = setup.clinicians[0]
    mine = list(Assignment.objects.filter(clinician=clinician).order_by("position"))
    assert len(mine) >= 11
    # 10 threads hammer the same assignment (a double click, two tabs, retries), half with a
    # different value; 10 threads each submit a different assignment.
    same = mine[0]
    jobs = [(same.pk, 4 if i % 2 else 2) for i in range(10)] + [(a.pk, 3) for a in mine[1:11]]

    def submit(assignment_id: int, value: int) -> None:
        services.submit_assignment(
            assignment_id=assignment_id,
            clinician=clinician,
            answers={
                "accuracy": A(value=value),
                "completeness": A(value=value),
                "clarity": A(value=value),
            },
        )

    run_in_threads([functools.partial(submit, *job) for job in jobs])
    per_pair = Counter(
        Rating.objects.filter(assignment__in=[a.pk for a in mine[:11]]).values_list(
            "assignment_id", "criterion_id"
        )
    )
    assert len(per_pair) == 11 * 3  # none lost
    assert set(per_pair.values()) == {1}  # none doubled
    assert (
        Assignment.objects.filter(pk__in=[a.pk for a in mine[:11]], status="submitted").count()
        == 11
    )
    # the contested assignment holds one of the submitted values, consistently across criteria
    values = set(Rating.objects.filter(assignment=same).values_list("value", flat=True))
    assert values in ({2}, {4})
    first_values = set(Rating.objects.filter(assignment=same).values_list("first_value", flat=True))
    assert len(first_values) == 1
