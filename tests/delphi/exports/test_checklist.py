"""The ACCORD / CREDES checklist: every item, prefilled only with what the tool knows."""

from __future__ import annotations

import pytest

from delphi.exports.checklist import (
    CHECKLIST_SECTIONS,
    PARTLY,
    PREFILLED,
    TO_AUTHORS,
    checklist_items,
)
from delphi.exports.data import load_study_data
from delphi.exports.registry import render_export


@pytest.mark.django_db
def test_checklist_has_the_35_accord_items_by_section_and_credes(scenario):
    items = checklist_items(load_study_data(scenario.study))
    accord = [i for i in items if i.guideline == "ACCORD"]
    assert len(accord) == 35
    per_section = {s: sum(1 for i in accord if i.section == s) for s in CHECKLIST_SECTIONS}
    assert per_section == {
        "Title and abstract": 1,
        "Introduction": 3,
        "Methods": 21,
        "Results": 5,
        "Discussion": 2,
        "Other information": 3,
    }
    assert [i.number for i in accord] == [str(n) for n in range(1, 36)]
    credes = [i for i in items if i.guideline == "CREDES"]
    assert credes and {i.section for i in credes} <= set(CHECKLIST_SECTIONS)
    for item in items:
        assert item.status in (PREFILLED, PARTLY, TO_AUTHORS)
        if item.status == TO_AUTHORS:
            assert item.answer == TO_AUTHORS
        if item.status == PARTLY:
            assert TO_AUTHORS in item.answer


@pytest.mark.django_db
def test_checklist_prefills_what_the_tool_knows_and_nothing_else(scenario):
    study = scenario.study
    items = {(i.guideline, i.topic): i for i in checklist_items(load_study_data(study))}
    definition = items[("ACCORD", "Consensus definition")]
    assert "COMET: consensus in when >= 70% rate 7-9" in definition.answer
    assert study.protocol_hash in definition.answer
    assert f"{study.protocol_locked_at:%Y-%m-%d}" in definition.answer
    response = items[("ACCORD", "Participation per round")]
    assert response.status == PREFILLED
    assert "round 1: 6/6 submitted (100%)" in response.answer
    assert "round 2: 4/6 submitted (66.7%)" in response.answer
    assert "attrition 33.3%" in items[("ACCORD", "Attrition")].answer
    assert "clinician 3, patient 3" in items[("ACCORD", "Panel description")].answer
    assert "3 accepted, 1 rejected" in items[("ACCORD", "New and changed items")].answer
    assert "Export consensus v1" in items[("ACCORD", "Final outcome")].answer
    assert "budget ran out" in items[("ACCORD", "Protocol")].answer  # the deviation
    for topic in ("Registration", "Ethics and consent", "Funding", "Strengths and limitations"):
        assert items[("ACCORD", topic)].answer == TO_AUTHORS
    definition_credes = items[("CREDES", "Definition of consensus")]
    assert study.protocol_hash in definition_credes.answer


@pytest.mark.django_db
def test_checklist_markdown_and_html(scenario):
    study = scenario.study
    markdown = render_export(study=study, name="checklist.md")[0].decode()
    assert markdown.count("| ") > 35
    for section in CHECKLIST_SECTIONS:
        assert f"### {section}" in markdown
    assert study.protocol_hash in markdown
    page, content_type, _ = render_export(study=study, name="checklist.html")
    assert content_type.startswith("text/html")
    text = page.decode()
    assert "<script" not in text and "to be completed by the authors" in text
