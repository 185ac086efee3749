"""Round trip: a study's ratings and machine scores, exported as long files and imported into
a new study with the same items, give the same score table and the same Table 2."""

from __future__ import annotations

import pytest

from agreement import selectors
from agreement.services import normalise_parameters
from agreement.services.computing import compute_report
from annotation import services
from annotation.models import ImportedRating, Item, StudyMembership
from annotation.selectors import LONG_RATING_COLUMNS, ratings_long_rows
from jury.score_imports import LONG_SCORE_COLUMNS, import_scores, scores_long_rows
from medhelm_site.common.csv_export import csv_text
from tests.agreement.factories import build_study
from tests.factories import UserFactory

PARAMETERS = normalise_parameters({"n_resamples": 60, "seed": 11})


def _copy_of(study):
    """A new study with the same rubric and the same items (texts, models, benchmarks,
    taxonomy nodes), created in the same order; no members but its coordinator."""
    coordinator = UserFactory()
    criteria = list(study.criteria.order_by("position").values(*services.CRITERION_FIELDS))
    copy = services.create_study(
        name="Copy", created_by=coordinator, criteria=criteria, ratings_per_item=2
    )
    rows = [
        services.ItemRow(
            external_id=i.external_id,
            input_text=i.input_text,
            output_text=i.output_text,
            model_name=i.model_name,
            reference_text=i.reference_text,
            benchmark=i.benchmark,
            taxonomy_node_id=i.taxonomy_node_id,
        )
        for i in Item.objects.filter(study=study).order_by("pk")
    ]
    services.create_items(study=copy, rows=rows, actor=coordinator)
    return copy, coordinator


def _table(study):
    table = selectors.score_data(study=study).table
    external = dict(Item.objects.filter(study=study).values_list("pk", "external_id"))
    table = table.assign(item=table["item"].map(external))
    return table.sort_values(["item", "criterion", "rater"]).reset_index(drop=True)


@pytest.mark.django_db
def test_exported_long_files_imported_into_a_new_study_give_the_same_report():
    built = build_study(n_items=12, n_clinicians=4, leave_pending=1)
    original = built.study
    ratings = csv_text(LONG_RATING_COLUMNS, ratings_long_rows(study=original)).encode()
    scores = csv_text(LONG_SCORE_COLUMNS, scores_long_rows(study=original)).encode()
    copy, coordinator = _copy_of(original)

    rated = services.import_ratings(
        study=copy, data=ratings, name="ratings-long.csv", actor=coordinator
    )
    scored = import_scores(study=copy, data=scores, name="scores-long.csv", actor=coordinator)
    assert rated.created > 0 and scored.created > 0
    assert StudyMembership.objects.filter(study=copy, is_imported=True).count() == 4
    assert ImportedRating.objects.filter(study=copy).count() == rated.created

    original_table, copy_table = _table(original), _table(copy)
    assert set(copy_table["rater_kind"]) == {"clinician", "judge", "jury", "metric"}
    assert original_table.equals(copy_table)

    results, _method, _hash = compute_report(study=original, parameters=PARAMETERS)
    again, _method, _hash = compute_report(study=copy, parameters=PARAMETERS)
    cells = [c for c in results["cells"] if c["section"] == "overall"]
    assert len(cells) >= 4 and any(c["estimate"] is not None for c in cells)
    for key in ("rows", "columns", "criteria", "cells", "differences", "sensitivity"):
        assert again[key] == results[key], key

    # Exporting the copy gives the same long files, and importing them again changes nothing.
    assert csv_text(LONG_RATING_COLUMNS, ratings_long_rows(study=copy)).encode() == ratings
    assert csv_text(LONG_SCORE_COLUMNS, scores_long_rows(study=copy)).encode() == scores
    assert services.import_ratings(study=copy, data=ratings, name="r.csv", actor=None).created == 0
    assert import_scores(study=copy, data=scores, name="s.csv", actor=None).created == 0
