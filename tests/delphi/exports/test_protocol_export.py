"""protocol.json: the locked document with its hash; what render_export refuses."""

from __future__ import annotations

import json

import pytest

from delphi.errors import DelphiError
from delphi.exports.registry import render_export
from delphi.models import DelphiStudy
from tests.delphi.flow import make_panel_study


@pytest.mark.django_db
def test_protocol_json_is_the_locked_document_with_its_hash(scenario):
    content, content_type, _ = render_export(study=scenario.study, name="protocol.json")
    data = json.loads(content)
    assert content_type == "application/json"
    assert data["protocol_hash"] == scenario.study.protocol_hash
    assert data["hash_matches_document"] is True
    assert data["document"] == scenario.study.protocol_document
    assert data["locked_at"] == scenario.study.protocol_locked_at.isoformat()


@pytest.mark.django_db
def test_protocol_json_refuses_an_unlocked_study():
    built = make_panel_study(n_panelists=2, lock=False)
    with pytest.raises(DelphiError, match="not locked"):
        render_export(study=built.study, name="protocol.json")


@pytest.mark.django_db
def test_a_protocol_edited_after_locking_shows_as_not_matching(scenario):
    study = scenario.study
    study.protocol_document = {**study.protocol_document, "title": "edited later"}
    study.save(update_fields=["protocol_document"])
    data = json.loads(render_export(study=study, name="protocol.json")[0])
    assert data["hash_matches_document"] is False


def test_unknown_export_name_is_refused():
    with pytest.raises(DelphiError, match="unknown export"):
        render_export(study=DelphiStudy(), name="secrets.csv")
