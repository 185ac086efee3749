"""The rating hot path's plain-SQL reads (annotation/selectors/hot_path.py) load exactly what
the ORM loads: every field of the assignment, its study, item and taxonomy node, with the
same Python types (datetimes, JSON, booleans, UUIDs) on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from django.db import transaction
from django.forms.models import model_to_dict
from django.utils import timezone

from annotation import selectors, services
from annotation.models import Assignment, Item, StudyMembership
from delphi.models import TaxonomyNode, TaxonomyVersion
from tests.factories import FULL_ANSWERS, make_study_with_members

pytestmark = pytest.mark.django_db


def _fields(obj) -> dict:
    return {f.attname: getattr(obj, f.attname) for f in type(obj)._meta.concrete_fields}


def _same(loaded, expected) -> None:
    got, want = _fields(loaded), _fields(expected)
    assert got == want
    assert {k: type(v) for k, v in got.items()} == {k: type(v) for k, v in want.items()}


@pytest.fixture
def rich():
    """An assignment whose item has a taxonomy node and JSON metadata, in a study with a
    lock time and a comment threshold, submitted once (so its timestamps are set)."""
    setup = make_study_with_members(n_items=4, n_clinicians=2, k=2, show_reference=False)
    clinician = setup.clinicians[0]
    assignment = Assignment.objects.filter(clinician=clinician).order_by("position").first()
    version = TaxonomyVersion.objects.create(name="hot path test taxonomy")
    node = TaxonomyNode.objects.create(
        version=version, kind=TaxonomyNode.Kind.CATEGORY, name="Triage", history=[{"round": 1}]
    )
    Item.objects.filter(pk=assignment.item_id).update(
        taxonomy_node=node, metadata={"source": "x", "n": [1, 2.5, None]}
    )
    services.submit_assignment(
        assignment_id=assignment.pk, clinician=clinician, answers=FULL_ANSWERS
    )
    return setup, clinician, Assignment.objects.get(pk=assignment.pk), node


def test_rater_assignment_loads_what_the_orm_loads(rich):
    setup, clinician, assignment, node = rich
    loaded = selectors.rater_assignment(
        user=clinician, handle=assignment.handle, study_id=setup.study.pk
    )
    expected = Assignment.objects.select_related("study", "item", "item__taxonomy_node").get(
        pk=assignment.pk
    )
    _same(loaded, expected)
    _same(loaded.study, expected.study)
    _same(loaded.item, expected.item)
    assert loaded.rates_in_study is True
    assert loaded.item.metadata == {"source": "x", "n": [1, 2.5, None]}
    _same(loaded.item.taxonomy_node, TaxonomyNode.objects.get(pk=node.pk))
    assert loaded.item.taxonomy_node.name == "Triage"


def test_rater_assignment_access_flag_and_misses(rich):
    setup, clinician, assignment, _ = rich
    other = setup.clinicians[1]
    assert selectors.rater_assignment(user=other, handle=assignment.handle) is None
    assert (
        selectors.rater_assignment(
            user=clinician, handle=assignment.handle, study_id=setup.study.pk + 1000
        )
        is None
    )
    StudyMembership.objects.filter(study=setup.study, user=clinician).update(is_active=False)
    loaded = selectors.rater_assignment(user=clinician, handle=assignment.handle)
    assert loaded is not None and loaded.rates_in_study is False


def test_locked_assignment_reads_the_study_lock(rich):
    setup, _, assignment, _ = rich
    with transaction.atomic():
        loaded, study_locked = selectors.locked_assignment(assignment_id=assignment.pk)
    _same(loaded, assignment)
    assert study_locked is False
    setup.study.locked_at = timezone.now()
    setup.study.save(update_fields=["locked_at"])
    with transaction.atomic():
        loaded, study_locked = selectors.locked_assignment(assignment_id=assignment.pk)
    assert study_locked is True
    assert loaded.study.locked_at == setup.study.locked_at
    assert selectors.locked_assignment(assignment_id=assignment.pk + 10_000) is None


def test_rubric_answers_match_the_stored_ratings(rich):
    _, _, assignment, _ = rich
    rubric = selectors.rubric_answers(assignment=assignment)
    criteria = list(assignment.study.criteria.order_by("position", "id"))
    assert [model_to_dict(c) for c, _ in rubric] == [model_to_dict(c) for c in criteria]
    stored = {r.criterion.key: r for r in assignment.ratings.select_related("criterion").order_by()}
    for criterion, answer in rubric:
        rating = stored[criterion.key]
        assert answer.rating_id == rating.pk
        assert answer.state() == {
            "value": rating.value,
            "cannot_assess": rating.cannot_assess,
            "comment": rating.comment,
        }
        assert answer.first_submitted is True


def test_resume_target_gives_roles_and_the_left_off_point(rich):
    setup, clinician, submitted, _ = rich
    roles, handle = selectors.resume_target(user=clinician, study_id=setup.study.pk)
    assert roles == {StudyMembership.Role.CLINICIAN}
    # No draft: the first unstarted in the clinician's own order (the first one is submitted).
    second = Assignment.objects.filter(study=setup.study, clinician=clinician).order_by("position")[
        1
    ]
    assert handle == second.handle != submitted.handle
    draft = Assignment.objects.filter(study=setup.study, clinician=clinician).order_by("position")[
        3
    ]
    services.save_draft(
        assignment_id=draft.pk,
        clinician=clinician,
        answers={"accuracy": services.CriterionAnswer(value=3)},
    )
    assert selectors.resume_target(user=clinician, study_id=setup.study.pk)[1] == draft.handle
    assert selectors.resume_target(user=setup.outsider, study_id=setup.study.pk) == (set(), None)
    roles, handle = selectors.resume_target(user=setup.coordinator, study_id=setup.study.pk)
    assert StudyMembership.Role.COORDINATOR in roles and handle is None
