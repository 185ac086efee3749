"""One way to write a median, a quartile and an IQR (delphi.stats.display), and the places
that use it: the panel's feedback, the coordinator's round page, the submit error, the report
(HTML and PDF text)."""

from __future__ import annotations

import pytest
from django.template import Context, Template

from delphi.stats import display


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (8.25, "8.25"),  # not "8.2": two decimals, not one
        (4.5, "4.5"),  # not "4.50"
        (6.0, "6"),
        (6, "6"),
        (7.333333, "7.33"),
        (7.335, "7.34"),  # half away from zero on the decimal value, not the binary float
        (2.675, "2.68"),
        (0.125, "0.13"),
        (-0.001, "0"),
        (None, "\u2013"),
    ],
)
def test_stat_number_follows_the_stated_rule(value, text):
    assert display.stat_number(value) == text


def test_quartiles_and_iqr_are_written_one_way():
    assert display.quartiles_text(4.5, 6.0) == "4.5\u20136"
    assert display.iqr_text(4.5, 6.0) == "4.5\u20136 (1.5)"
    assert display.iqr_text(7.25, 8.75) == "7.25\u20138.75 (1.5)"
    assert display.iqr_text(None, 6.0) == "\u2013"
    assert "two decimals" in display.ROUNDING_RULE


def test_template_filters_write_the_same_text():
    class Stats:
        median, q1, q3 = 8.25, 4.5, 6.0

    rendered = Template(
        "{% load delphi_numbers %}{{ s.median|stat }}|{{ s|iqr }}|{{ pair|quartiles }}|{{ none|stat }}"
    ).render(Context({"s": Stats(), "pair": (4.5, 6.0), "none": None}))
    assert rendered == "8.25|4.5\u20136 (1.5)|4.5\u20136|\u2013"
