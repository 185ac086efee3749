"""Fixtures of the HELM verdict import tests: a study with the MedHELM rubric, its
coordinator, and uploads kept under a temporary MEDIA_ROOT."""

from __future__ import annotations

import pytest

from annotation import services
from tests.factories import MEDHELM_CRITERIA, UserFactory


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def coordinator(db):
    return UserFactory()


@pytest.fixture
def study(coordinator):
    return services.create_study(
        name="HELM jury study", created_by=coordinator, criteria=MEDHELM_CRITERIA
    )
