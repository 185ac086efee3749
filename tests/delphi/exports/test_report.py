"""The Delphi report as a standalone HTML page and as a PDF."""

from __future__ import annotations

import math
import re

import pytest

from delphi import consensus, stats
from delphi.exports.charts import ITEMS_PER_FIGURE
from delphi.exports.checklist import checklist_items
from delphi.exports.data import load_study_data
from delphi.exports.report import render_report_html, render_report_pdf, report_context
from delphi.exports.report_text import LINES_PER_PAGE, report_lines
from tests.delphi.exports.scenarios import identifying_strings
from tests.delphi.flow import make_panel_study, run_round


def pdf_page_count(content: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page\b(?!s)", content))


def assert_anonymous(text: str, built) -> None:
    for forbidden in identifying_strings(built):
        # "panelist1" must not match inside "panelist10" of another study: exact tokens.
        assert not re.search(re.escape(forbidden) + r"(?![0-9])", text), forbidden


@pytest.mark.django_db
def test_html_report_is_standalone_with_charts_and_no_javascript(scenario):
    study = scenario.study
    html = render_report_html(load_study_data(study))
    assert html.lstrip().startswith("<!DOCTYPE html>")
    assert "<script" not in html.lower() and "javascript:" not in html.lower()
    assert not re.search(r"<link|<img|src=|@import", html)  # nothing fetched: opens offline
    # Flow chart, outcomes per round, and one figure of small multiples (8 items <= 8).
    assert html.count("<svg") == 3
    assert "<?xml" not in html
    assert study.protocol_hash in html
    assert "verified: the stored document hashes to this value" in html
    for heading in (
        "1. Protocol",
        "2. Panel",
        "3. Flow of panelists per round",
        "4. Rounds",
        "6. Changes to items, with reasons",
        "7. Stability between rounds",
        "8. Final taxonomy",
        "9. Reporting checklist",
    ):
        assert heading in html


@pytest.mark.django_db
def test_html_report_states_the_protocol_in_words_and_the_results(scenario):
    study = scenario.study
    html = render_report_html(load_study_data(study))
    rule = consensus.rule_from_dict(study.protocol_document["consensus_rule"]).describe()
    assert rule.replace(">", "&gt;").replace("<", "&lt;") in html
    assert "Stop after at most 3 rounds, or when every item of the latest round reached" in html
    assert "items that reached consensus (in or out) are not rated again" in html
    assert stats.describe_quantile_method("linear").replace("'", "&#x27;") in html
    assert "Reason for a rating outside the IQR" in html
    # Stopping decision, comprehensiveness (round 1 scores 4, 4, 3, 5, 4, 2), changes.
    assert "4 of 7 items of round 1 without consensus" in html
    assert f"mean {sum([4, 4, 3, 5, 4, 2]) / 6:.2f}" in html
    assert "Scheduling is in the MedHELM scope" in html
    assert "<td>Treatment</td><td>subcategory</td><td>no consensus &gt; consensus in</td>" in html
    assert "Export consensus v1" in html and "Not released yet" not in html
    assert "ended early by the coordinator: budget ran out" in html
    assert "Statistics of clinician, patient withheld" in html
    # The flow table: round 2 response rate 4 / 6.
    assert "66.7%" in html
    assert "to be completed by the authors" in html


@pytest.mark.django_db
def test_report_and_pdf_text_show_pseudonyms_only(scenario):
    html = render_report_html(load_study_data(scenario.study))
    lines = "\n".join(report_lines(report_context(load_study_data(scenario.study), charts=False)))
    for text in (html, lines):
        assert_anonymous(text, scenario.built)
        for panelist in scenario.built.panelists:
            assert panelist.pseudonym in text


@pytest.mark.django_db
def test_pdf_has_text_pages_and_the_charts(scenario):
    study = scenario.study
    content = render_report_pdf(load_study_data(study))
    assert content.startswith(b"%PDF")
    data = load_study_data(study)
    context = report_context(data, charts=False)
    text_pages = math.ceil(len(report_lines(context)) / LINES_PER_PAGE)
    # Flow chart, outcomes per round, and the small multiples: 8 items, 8 per figure.
    charts = 1 + 1 + math.ceil(len(data.identities_in_order()) / ITEMS_PER_FIGURE)
    assert text_pages > 1
    assert pdf_page_count(content) == text_pages + charts


@pytest.mark.django_db
def test_group_statistics_are_shown_for_groups_of_five(large_group_study):
    built = large_group_study
    html = render_report_html(load_study_data(built.study))
    assert "nurse: consensus out, median 2" in html
    assert "physician: consensus in" in html
    assert "Statistics of nurse" not in html and "Statistics of physician" not in html
    assert "Not released yet." in html


@pytest.mark.django_db
def test_item_names_are_escaped_in_the_page_and_the_charts():
    taxonomy = {
        "name": "Hostile names",
        "categories": [{"name": "<script>alert(1)</script>", "subcategories": ["Costs in $ & €"]}],
    }
    built = make_panel_study(n_panelists=3, taxonomy=taxonomy)
    run_round(built, built.round(1), {})
    html = render_report_html(load_study_data(built.study))
    assert "<script" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "Costs in $ &amp; €" in html


@pytest.mark.django_db
def test_report_of_an_unlocked_study_says_so():
    built = make_panel_study(n_panelists=2, lock=False)
    html = render_report_html(load_study_data(built.study))
    assert "The protocol is not locked yet" in html
    assert "No round opened yet." in html
    items = checklist_items(load_study_data(built.study))
    definition = next(i for i in items if i.topic == "Consensus definition")
    assert "NOT locked" in definition.answer
