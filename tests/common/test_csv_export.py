"""The one CSV writer: formula cells quoted, numbers kept numbers, rows by order or name."""

import csv
import io
from decimal import Decimal

import pytest

from medhelm_site.common.csv_export import csv_bytes, csv_cell, csv_lines, csv_text


@pytest.mark.parametrize("text", ["=HYPERLINK(1)", "+1", "-1+1", "@SUM(A1)", "\tx", "\rx"])
def test_text_a_spreadsheet_would_run_gets_an_apostrophe(text):
    assert csv_cell(text) == "'" + text


@pytest.mark.parametrize("value", [-1, -0.5, 0, 2.25, True])
def test_numbers_stay_numbers(value):
    assert csv_cell(value) == value


def test_decimals_are_written_without_an_exponent_and_none_is_empty():
    assert csv_cell(Decimal("0E-8")) == "0"
    assert csv_cell(Decimal("1.50000000")) == "1.5"
    assert csv_cell(Decimal("1.5E+1")) == "15"
    assert csv_cell(None) == ""


def test_rows_by_position_or_by_name_read_back_as_written():
    text = csv_text(["a", "b"], [[1, "=x"], {"b": "plain", "a": -2}, {"a": 3}])
    assert list(csv.reader(io.StringIO(text))) == [
        ["a", "b"],
        ["1", "'=x"],
        ["-2", "plain"],
        ["3", ""],
    ]
    assert csv_bytes(["a"], [["é"]]) == "a\r\né\r\n".encode()


def test_lines_stream_one_row_at_a_time():
    lines = csv_lines(["a"], iter([[1], [2]]), line_end="\n")
    assert next(lines) == "a\n"
    assert list(lines) == ["1\n", "2\n"]


@pytest.mark.parametrize("line_end", ["\r\n", "\n"])
def test_line_breaks_inside_cells_read_back_whole_whatever_the_line_ending(line_end):
    cells = ["a bare\rcarriage return", "a bare\nline feed", "both\r\nat once", "plain"]
    text = csv_text(["one", "two", "three", "four"], [cells], line_end=line_end)

    assert text.startswith("one,two,three,four" + line_end) and text.endswith(",plain" + line_end)
    assert list(csv.reader(io.StringIO(text, newline=""))) == [
        ["one", "two", "three", "four"],
        cells,
    ]
