"""Fixtures of the item import tests: a study with a small taxonomy, its coordinator, and
uploads kept under a temporary MEDIA_ROOT."""

from __future__ import annotations

import pytest

from annotation import services
from delphi.services import create_taxonomy_version
from tests.factories import MEDHELM_CRITERIA, UserFactory
from tests.support.helm_runs import make_helm_suite


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def taxonomy(db):
    return create_taxonomy_version(
        tree={
            "name": "Test taxonomy",
            "categories": [
                {
                    "name": "Clinical Decision Support",
                    "subcategories": [
                        {"name": "Planning Treatments", "tasks": ["Treatment planning QA"]}
                    ],
                }
            ],
        },
        source="manual",
    )


@pytest.fixture
def coordinator(db):
    return UserFactory()


@pytest.fixture
def study(coordinator, taxonomy):
    return services.create_study(
        name="Import study",
        created_by=coordinator,
        criteria=MEDHELM_CRITERIA,
        taxonomy_version=taxonomy,
    )


@pytest.fixture(scope="session")
def helm_suite(tmp_path_factory):
    """A real HELM suite folder, made once per session by crfm-helm's helm-run (offline,
    simple/model1 on simple1, simple_mcqa and simple_classification)."""
    return make_helm_suite(tmp_path_factory.mktemp("helm"))
