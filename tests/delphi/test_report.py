"""The Delphi report (standalone HTML and PDF) and the delphi_report command."""

from __future__ import annotations

import math
import re

import pytest
from django.core.management import CommandError, call_command

from delphi import consensus, exports, report, stats
from delphi.models import DelphiStudy
from tests.delphi.flow import make_panel_study, run_round
from tests.delphi.test_exports import (
    build_large_group_study,
    build_two_round_study,
    identifying_strings,
)


@pytest.fixture
def scenario(db):
    return build_two_round_study()


def pdf_page_count(content: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page\b(?!s)", content))


def assert_anonymous(text: str, built) -> None:
    for forbidden in identifying_strings(built):
        # "panelist1" must not match inside "panelist10" of another study: exact tokens.
        assert not re.search(re.escape(forbidden) + r"(?![0-9])", text), forbidden


@pytest.mark.django_db
def test_html_report_is_standalone_with_charts_and_no_javascript(scenario):
    study = scenario.study
    html = report.render_report_html(study)
    assert html.lstrip().startswith("<!DOCTYPE html>")
    assert "<script" not in html.lower() and "javascript:" not in html.lower()
    assert not re.search(r"<link|<img|src=|@import", html)  # nothing fetched: opens offline
    # Flow chart, outcomes per round, and one figure of small multiples (8 items <= 8).
    assert html.count("<svg") == 3
    assert "<?xml" not in html
    assert study.protocol_hash in html
    assert "verified: the stored document hashes to this value" in html
    for heading in ("1. Protocol", "2. Panel", "3. Flow of panelists per round", "4. Rounds",
                    "6. Changes to items, with reasons", "7. Stability between rounds",
                    "8. Final taxonomy", "9. Reporting checklist"):  # fmt: skip
        assert heading in html


@pytest.mark.django_db
def test_html_report_states_the_protocol_in_words_and_the_results(scenario):
    study = scenario.study
    html = report.render_report_html(study)
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
    html = report.render_report_html(scenario.study)
    lines = "\n".join(report.report_lines(report.report_context(scenario.study, charts=False)))
    for text in (html, lines):
        assert_anonymous(text, scenario.built)
        for panelist in scenario.built.panelists:
            assert panelist.pseudonym in text


@pytest.mark.django_db
def test_pdf_has_text_pages_and_the_charts(scenario):
    study = scenario.study
    content = report.render_report_pdf(study)
    assert content.startswith(b"%PDF")
    data = exports.load_study_data(study)
    context = report.report_context(study, data=data, charts=False)
    text_pages = math.ceil(len(report.report_lines(context)) / report.LINES_PER_PAGE)
    # Flow chart, outcomes per round, and the small multiples: 8 items, 8 per figure.
    charts = 1 + 1 + math.ceil(len(data.identities_in_order()) / report.ITEMS_PER_FIGURE)
    assert text_pages > 1
    assert pdf_page_count(content) == text_pages + charts


@pytest.mark.django_db
def test_group_statistics_are_shown_for_groups_of_five():
    built = build_large_group_study()
    html = report.render_report_html(built.study)
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
    html = report.render_report_html(built.study)
    assert "<script" not in html
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "Costs in $ &amp; €" in html


@pytest.mark.django_db
def test_report_of_an_unlocked_study_says_so():
    built = make_panel_study(n_panelists=2, lock=False)
    html = report.render_report_html(built.study)
    assert "The protocol is not locked yet" in html
    assert "No round opened yet." in html
    items = exports.checklist_items(study=built.study)
    definition = next(i for i in items if i.topic == "Consensus definition")
    assert "NOT locked" in definition.answer


# --------------------------------------------------------------------------- command


@pytest.mark.django_db
def test_command_writes_the_pdf_and_the_exports(tmp_path, capsys):
    # A small study: the PDF's content is tested above; here only that the file is written.
    built = make_panel_study(n_panelists=3)
    run_round(built, built.round(1), {})
    study = built.study
    target = tmp_path / "report.pdf"
    call_command("delphi_report", str(study.pk), "--format", "pdf", "--output", str(target))
    assert target.read_bytes().startswith(b"%PDF")
    target = tmp_path / "flow.csv"
    call_command("delphi_report", str(study.pk), "--format", "flow.csv", "--output", str(target))
    expected = exports.render_export(study=study, name="flow.csv")[0]
    assert target.read_bytes() == expected
    call_command("delphi_report", str(study.pk), "--format", "checklist")
    out = capsys.readouterr().out
    assert out.startswith("# Reporting checklist") and study.protocol_hash in out


@pytest.mark.django_db
def test_command_errors_are_clear(tmp_path):
    with pytest.raises(CommandError, match="no Delphi study 999999"):
        call_command("delphi_report", "999999", "--format", "html")
    built = make_panel_study(n_panelists=2, lock=False)
    with pytest.raises(CommandError, match="needs --output"):
        call_command("delphi_report", str(built.study.pk), "--format", "pdf")
    with pytest.raises(CommandError, match="not locked"):
        call_command(
            "delphi_report", str(built.study.pk), "--format", "protocol.json",
            "--output", str(tmp_path / "p.json"),
        )  # fmt: skip
    assert DelphiStudy.objects.filter(pk=built.study.pk).exists()
