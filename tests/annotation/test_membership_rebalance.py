"""Adding or removing a clinician mid-study rebalances only unstarted work."""

from __future__ import annotations

from collections import Counter

import pytest

from annotation import services
from annotation.models import Assignment, StudyMembership
from tests.factories import FULL_ANSWERS, UserFactory, make_study_with_members

A = services.CriterionAnswer


def live(study):
    return Assignment.objects.filter(study=study).exclude(status="withdrawn")


def per_item(study):
    return Counter(live(study).values_list("item_id", flat=True))


@pytest.mark.django_db
def test_a_new_clinician_gets_a_share_and_started_work_stays():
    setup = make_study_with_members(n_items=12, n_clinicians=3, k=2)
    first = setup.clinicians[0]
    started = list(Assignment.objects.filter(clinician=first).order_by("position")[:3])
    services.submit_assignment(assignment_id=started[0].pk, clinician=first, answers=FULL_ANSWERS)
    services.save_draft(
        assignment_id=started[1].pk, clinician=first, answers={"accuracy": A(value=2)}
    )
    kept = {(a.item_id, a.clinician_id) for a in live(setup.study).exclude(status="pending")}

    newcomer = UserFactory()
    services.add_member(study=setup.study, user=newcomer, role="clinician", actor=setup.coordinator)

    assert set(per_item(setup.study).values()) == {2}
    loads = Counter(live(setup.study).values_list("clinician_id", flat=True))
    assert loads[newcomer.pk] > 0
    assert max(loads.values()) - min(loads.values()) <= 1
    assert kept <= {(a.item_id, a.clinician_id) for a in live(setup.study)}
    assert Assignment.objects.get(pk=started[0].pk).status == "submitted"
    assert Assignment.objects.get(pk=started[1].pk).status == "in_progress"
    # positions stay unique and gap-free after the kept work
    for clinician_id in loads:
        positions = list(
            live(setup.study).filter(clinician_id=clinician_id).values_list("position", flat=True)
        )
        assert len(positions) == len(set(positions))


@pytest.mark.django_db
def test_a_leaving_clinician_keeps_submitted_ratings_and_hands_over_the_rest():
    setup = make_study_with_members(n_items=12, n_clinicians=4, k=2)
    leaver = setup.clinicians[0]
    mine = list(Assignment.objects.filter(clinician=leaver).order_by("position"))
    services.submit_assignment(assignment_id=mine[0].pk, clinician=leaver, answers=FULL_ANSWERS)
    services.save_draft(
        assignment_id=mine[1].pk, clinician=leaver, answers={"accuracy": A(value=2)}
    )

    services.remove_member(
        study=setup.study, user=leaver, role="clinician", actor=setup.coordinator
    )

    assert Assignment.objects.get(pk=mine[0].pk).status == "submitted"  # still counts
    assert Assignment.objects.get(pk=mine[1].pk).status == "withdrawn"  # draft kept as history
    assert not live(setup.study).filter(clinician=leaver).exclude(status="submitted").exists()
    assert set(per_item(setup.study).values()) == {2}
    others = Counter(
        live(setup.study).exclude(clinician=leaver).values_list("clinician_id", flat=True)
    )
    assert max(others.values()) - min(others.values()) <= 1
    assert not StudyMembership.objects.get(
        study=setup.study, user=leaver, role="clinician"
    ).is_active


@pytest.mark.django_db
def test_exclusion_field_keeps_clinicians_off_their_own_items():
    setup = make_study_with_members(n_items=0, n_clinicians=3, k=2, exclusion_metadata_key="author")
    author = setup.clinicians[0]
    rows = [
        services.ItemRow(
            external_id=f"n{i}",
            input_text="note",
            output_text="out",
            model_name="m",
            metadata={"author": author.username if i % 2 == 0 else "someone-else"},
        )
        for i in range(10)
    ]
    services.create_items(study=setup.study, rows=rows, actor=setup.coordinator)
    services.assign_items(study=setup.study, actor=setup.coordinator, seed=1)
    own = live(setup.study).filter(clinician=author, item__metadata__author=author.username)
    assert not own.exists()
    assert set(per_item(setup.study).values()) == {2}
