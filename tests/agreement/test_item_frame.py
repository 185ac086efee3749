"""The report's item frame: every item of a study with its model, benchmark and category,
attention checks and calibration items set apart by id."""

from __future__ import annotations

import pytest

from agreement.item_frame import NO_BENCHMARK, NO_CATEGORY, items_frame
from annotation import services
from annotation.models import Item
from tests.agreement.factories import CATEGORIES, two_category_taxonomy
from tests.factories import make_study_with_members

pytestmark = pytest.mark.django_db


def test_items_carry_their_category_and_checks_and_calibration_stand_apart():
    setup = make_study_with_members(n_items=5)
    study = setup.study
    nodes = two_category_taxonomy(study)
    items = list(Item.objects.filter(study=study).order_by("pk"))
    placed, sub_placed, unplaced, check, calibrating = items
    Item.objects.filter(pk=placed.pk).update(taxonomy_node=nodes["task"], benchmark="MEDIQA")
    Item.objects.filter(pk=sub_placed.pk).update(taxonomy_node=nodes["subcategory"])
    Item.objects.filter(pk=unplaced.pk).update(taxonomy_node=None, benchmark="")
    services.mark_attention_check(
        study=study,
        item_id=check.pk,
        expected={"accuracy": (4, 5)},
        note="the reference verbatim",
        actor=setup.coordinator,
    )
    services.mark_calibration_item(
        study=study,
        item_id=calibrating.pk,
        reference={"accuracy": 4},
        note="agreed by the panel",
        actor=setup.coordinator,
    )

    frame, checks, calibration = items_frame(study=study)

    assert checks == {check.pk} and calibration == {calibrating.pk}
    assert list(frame.columns) == ["item", "external_id", "model", "benchmark", "category"]
    rows = frame.set_index("item")
    assert list(rows.index) == [placed.pk, sub_placed.pk, unplaced.pk]
    # a task's category is its root, two levels up; a subcategory's, one level up
    assert rows.loc[placed.pk, "category"] == CATEGORIES[0]
    assert rows.loc[placed.pk, "benchmark"] == "MEDIQA"
    assert rows.loc[sub_placed.pk, "category"] == CATEGORIES[1]
    assert rows.loc[unplaced.pk, ["category", "benchmark"]].tolist() == [NO_CATEGORY, NO_BENCHMARK]
    assert rows.loc[placed.pk, "external_id"] == placed.external_id
    assert rows.loc[placed.pk, "model"] == placed.model_name
