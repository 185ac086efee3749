"""A round still open is not reported as attrition (flow chart, flow table, checklist), and
the PDF's text prints item names whole, however long."""

from __future__ import annotations

import pytest

from delphi import services
from delphi.exports.answer_tables import flow_rows
from delphi.exports.charts import histogram_figures
from delphi.exports.checklist import study_facts
from delphi.exports.data import WHOLE_PANEL, load_study_data
from delphi.exports.report import render_report_html, report_context
from delphi.exports.report_text import report_lines
from delphi.models import RoundItem
from tests.delphi.flow import BASE_URL, answer_all, make_panel_study, submit_ratings

LONG_NAME = "Predicting Patient Risks and Outcomes in Emergency and Critical Care Settings"
TAXONOMY = {
    "name": "Long names",
    "categories": [{"name": LONG_NAME, "subcategories": ["Diagnosis", "Treatment"]}],
}


@pytest.fixture
def round_two_open(db):
    """Round 1 answered by all three, round 2 open with one submission so far."""
    built = make_panel_study(n_panelists=3, taxonomy=TAXONOMY)
    actor, round1 = built.coordinator, built.round(1)
    services.open_round(round_=round1, actor=actor, base_url=BASE_URL)
    answer_all(built, round1, {"Diagnosis": [4, 5, 6]})
    services.close_round(round_=round1, actor=actor)
    services.analyse_round(round_=round1, actor=actor)
    services.release_feedback(round_=round1, actor=actor)
    round2 = services.start_next_round(study=built.study, actor=actor)
    services.open_round(round_=round2, actor=actor, base_url=BASE_URL)
    submit_ratings(built.panelists[0], round2, {})
    return built


@pytest.mark.django_db
def test_an_open_round_has_no_attrition_yet(round_two_open):
    data = load_study_data(round_two_open.study)
    second = next(r for r in flow_rows(data) if r["round"] == 2 and r["group"] == WHOLE_PANEL)
    assert (second["submitted"], second["pending"]) == (1, 2)
    assert second["attrition_vs_round_1_pct"] is None
    facts = study_facts(data)
    assert "66.7" not in facts["attrition"] and "attrition 100" not in facts["attrition"]
    assert (
        "still open, 1 of 3 round-1 respondents submitted so far, 2 not yet" in facts["attrition"]
    )
    assert "so far: the round is open" in facts["response"]
    html = render_report_html(data)
    assert "not final (round open)" in html


@pytest.mark.django_db
def test_a_closed_round_reports_its_attrition(round_two_open):
    built = round_two_open
    services.close_round(round_=built.round(2), actor=built.coordinator)
    data = load_study_data(built.study)
    second = next(r for r in flow_rows(data) if r["round"] == 2 and r["group"] == WHOLE_PANEL)
    assert second["attrition_vs_round_1_pct"] == pytest.approx(100 * 2 / 3)


@pytest.mark.django_db
def test_the_pdf_text_prints_long_item_names_whole(round_two_open):
    lines = report_lines(report_context(load_study_data(round_two_open.study), charts=False))
    text = "\n".join(lines)
    words = LONG_NAME.split()
    # Wrapped within its column, every word of the name is there, in order, in the table.
    table = [line for line in lines if line.startswith("  ") and "cate" in line]
    assert table, "no category row in the round tables"
    joined = " ".join(text.split())
    position = 0
    for word in words:
        position = joined.index(word, position) + len(word)
    assert "Outco " not in text and not any(line.rstrip().endswith("Outco") for line in lines)
    assert "Statistics of the whole panel" in text and "two decimals" in text


@pytest.mark.django_db
def test_the_small_multiples_print_long_item_names_whole(round_two_open):
    longer = LONG_NAME + " Including Sepsis, Stroke and Acute Kidney Injury in Adults"
    RoundItem.objects.filter(name=LONG_NAME).update(name=longer)
    figures = histogram_figures(load_study_data(round_two_open.study))
    labels = [" ".join(t.get_text().split()) for f in figures for t in f.texts]
    assert longer in labels
    assert not any("\u2026" in label for label in labels)
