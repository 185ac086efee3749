"""The one CSV writer behind every export of the site.

Spreadsheet programs run a cell that starts with = + - @ (or a tab or carriage return that
they strip first) as a formula, so free text from users (comments, names, error reasons)
could act in a researcher's spreadsheet. Every text cell that starts so gets a leading
apostrophe; numbers (NumPy scalars too) are written as numbers, so a negative value stays
a number.
"""

from __future__ import annotations

import csv
import io
import numbers
from collections.abc import Iterable, Iterator, Mapping, Sequence
from decimal import Decimal
from typing import Any

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def csv_cell(value: Any) -> Any:
    """A value as the writer should put it in a cell: text that a spreadsheet would run as a
    formula is quoted with an apostrophe; a Decimal is written without an exponent."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return value
    if isinstance(value, Decimal):
        return format(value.normalize(), "f") if value.is_finite() else str(value)
    if isinstance(value, numbers.Real):  # int, float and NumPy scalars from pandas
        return value
    text = str(value)
    if text.startswith(FORMULA_TRIGGERS):
        return "'" + text
    return text


def _row(row: Sequence[Any] | Mapping[str, Any], columns: Sequence[str]) -> list[Any]:
    if isinstance(row, Mapping):
        return [csv_cell(row.get(column)) for column in columns]
    return [csv_cell(value) for value in row]


class _Line:
    """A file-like object whose write() hands back what it was given (for streaming)."""

    def write(self, value: str) -> str:
        return value


def csv_lines(
    columns: Sequence[str],
    rows: Iterable[Sequence[Any] | Mapping[str, Any]],
    *,
    line_end: str = "\r\n",
) -> Iterator[str]:
    """The header line, then one line per row: for a streaming response over a large query.

    A row is a sequence in column order or a mapping by column name (missing keys are empty).
    """
    # The csv module quotes a cell only for the characters of its own line terminator, so a
    # writer ending lines with "\n" would leave a bare carriage return in a cell unquoted and a
    # reader would split the row there. Every line is written with "\r\n" (both quoted) and
    # its ending swapped afterwards.
    writer = csv.writer(_Line(), lineterminator="\r\n")
    yield writer.writerow(list(columns))[:-2] + line_end
    for row in rows:
        yield writer.writerow(_row(row, columns))[:-2] + line_end


def csv_text(
    columns: Sequence[str],
    rows: Iterable[Sequence[Any] | Mapping[str, Any]],
    *,
    line_end: str = "\r\n",
) -> str:
    """The whole CSV as one string (header row first)."""
    buffer = io.StringIO()
    for line in csv_lines(columns, rows, line_end=line_end):
        buffer.write(line)
    return buffer.getvalue()


def csv_bytes(
    columns: Sequence[str],
    rows: Iterable[Sequence[Any] | Mapping[str, Any]],
    *,
    line_end: str = "\r\n",
) -> bytes:
    """The whole CSV as UTF-8 bytes (header row first)."""
    return csv_text(columns, rows, line_end=line_end).encode("utf-8")
