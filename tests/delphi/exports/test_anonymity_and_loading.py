"""No export names a person; the bundle loads with a fixed number of queries."""

from __future__ import annotations

import re

import pytest

from delphi.exports import answer_tables, tables
from delphi.exports.checklist import checklist_items
from delphi.exports.data import load_study_data
from delphi.exports.registry import EXPORT_NAMES, render_export
from delphi.models import DelphiStudy
from tests.delphi.exports.scenarios import identifying_strings


@pytest.mark.django_db
def test_no_export_contains_a_username_or_an_email(scenario):
    forbidden = identifying_strings(scenario.built)
    for name in EXPORT_NAMES:
        if name == "report.pdf":
            continue  # compressed streams; the PDF's text is checked in test_report
        content = render_export(study=scenario.study, name=name)[0].decode()
        for text in forbidden:
            assert not re.search(re.escape(text) + r"(?![0-9])", content), (name, text)


@pytest.mark.django_db
def test_loading_takes_a_fixed_number_of_queries(scenario, django_assert_max_num_queries):
    # One query per table whatever the number of items and panelists (no N+1).
    study = DelphiStudy.objects.get(pk=scenario.study.pk)
    with django_assert_max_num_queries(12):
        data = load_study_data(study)
    with django_assert_max_num_queries(0):
        for builder in (
            answer_tables.flow_rows,
            tables.item_rows,
            tables.change_rows,
            answer_tables.comment_rows,
            answer_tables.raw_rows,
            answer_tables.statistics_rows,
            answer_tables.stability_rows,
            checklist_items,
        ):
            builder(data)
