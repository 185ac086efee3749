from __future__ import annotations

import json

import pytest

from delphi.models import TaxonomyNode, TaxonomyVersion
from delphi.services import (
    MEDHELM_TAXONOMY_FIXTURE,
    TaxonomyFormatError,
    create_taxonomy_version,
    ensure_medhelm_taxonomy,
)

PUBLISHED = {
    "Clinical Decision Support": 4,
    "Clinical Note Generation": 4,
    "Patient Communication and Education": 5,
    "Medical Research Assistance": 5,
    "Administration and Workflow": 4,
}


@pytest.mark.django_db
def test_medhelm_taxonomy_has_the_published_shape():
    version = ensure_medhelm_taxonomy()
    assert version.name == "MedHELM 2025" and version.status == "released"
    categories = version.nodes.filter(kind="category").order_by("position")
    assert [c.name for c in categories] == list(PUBLISHED)
    for category in categories:
        assert category.children.filter(kind="subcategory").count() == PUBLISHED[category.name]
    assert version.nodes.filter(kind="subcategory").count() == 22


@pytest.mark.django_db
def test_loading_twice_creates_one_version():
    ensure_medhelm_taxonomy()
    ensure_medhelm_taxonomy()
    assert TaxonomyVersion.objects.count() == 1
    assert TaxonomyNode.objects.count() == 27


@pytest.mark.django_db
def test_bad_tree_names_where_and_saves_nothing():
    tree = json.loads(MEDHELM_TAXONOMY_FIXTURE.read_text())
    tree["name"] = "Broken"
    tree["categories"][2]["subcategories"][1] = {"name": "  "}
    with pytest.raises(
        TaxonomyFormatError, match=r"categories\[2\]\.subcategories\[1\]: needs a non-empty name"
    ):
        create_taxonomy_version(tree=tree, source="import")
    assert not TaxonomyVersion.objects.filter(name="Broken").exists()
