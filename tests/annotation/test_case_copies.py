"""Two responses to one case in a rater's queue are lettered A, B in the rater's own order:
stable for the rater, unrelated to the model or to import order."""

from __future__ import annotations

import pytest

from annotation import selectors
from annotation.models import Assignment
from annotation.selectors.queue import copy_letter
from tests.e2e.factories import make_keyboard_study


@pytest.mark.parametrize(
    ("index", "letter"), [(0, "A"), (1, "B"), (25, "Z"), (26, "AA"), (27, "AB"), (701, "ZZ")]
)
def test_copy_letters_run_like_spreadsheet_columns(index, letter):
    assert copy_letter(index) == letter


def test_copy_letter_refuses_a_negative_index():
    with pytest.raises(ValueError, match="0 or more"):
        copy_letter(-1)


@pytest.mark.django_db
def test_copies_are_lettered_by_each_raters_own_order():
    s = make_keyboard_study()
    seen_pairs = 0
    for rater in (
        Assignment.objects.filter(study=s.study).values_list("clinician", flat=True).distinct()
    ):
        mine = list(
            Assignment.objects.filter(study=s.study, clinician_id=rater)
            .select_related("item")
            .order_by("position")
        )
        by_case: dict[str, list[Assignment]] = {}
        for a in mine:
            by_case.setdefault(a.item.external_id, []).append(a)
        for copies in by_case.values():
            got = [selectors.case_copy(assignment=a) for a in copies]
            if len(copies) == 1:
                assert got == [None]
                continue
            seen_pairs += 1
            assert [c.letter for c in got] == ["A", "B"][: len(copies)]
            assert {c.count for c in got} == {len(copies)}
    assert seen_pairs, "the study gives some rater two responses to one case"


@pytest.mark.django_db
def test_the_letter_follows_position_not_the_model():
    s = make_keyboard_study()
    first, second = _a_pair(s)
    assert selectors.case_copy(assignment=first).letter == "A"
    # Swap the two positions (as another rater's shuffle would): the letters follow.
    p1, p2 = first.position, second.position
    Assignment.objects.filter(pk=first.pk).update(position=10_000)
    Assignment.objects.filter(pk=second.pk).update(position=p1)
    Assignment.objects.filter(pk=first.pk).update(position=p2)
    first.refresh_from_db()
    second.refresh_from_db()
    assert selectors.case_copy(assignment=second).letter == "A"
    assert selectors.case_copy(assignment=first).letter == "B"


def _a_pair(s) -> tuple[Assignment, Assignment]:
    by_case: dict[str, list[Assignment]] = {}
    for a in s.queue:
        by_case.setdefault(a.item.external_id, []).append(a)
    return next(tuple(c) for c in by_case.values() if len(c) == 2)
