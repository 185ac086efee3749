"""Long files of scores (one score per line): CSV or JSONL, read into plain records.

Shared by the ratings import (annotation.services.rating_imports) and the machine scores
import (jury.score_imports): this module knows the two formats and the column names, not
what a value means. Every problem is a LineError naming the line, the column and why, and
reading goes on after one, so that one pass reports them all.

The format comes from the file name (.csv; .jsonl, .ndjson, .json) or else from the content
(a first character "{" is JSONL). CSV headers are matched case-insensitively; a cell that
starts with an apostrophe before a formula trigger (= + - @ tab CR) is read without the
apostrophe, since that is how the site's CSV writer quotes such text on export.
"""

from __future__ import annotations

import codecs
import csv
import io
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from annotation.imports.rows import loads, physical_lines, suggest, type_name, utf8_reason
from medhelm_site.common.csv_export import FORMULA_TRIGGERS

LONG_FORMATS = ("csv", "jsonl")
JSONL_SUFFIXES = (".jsonl", ".ndjson", ".json")
# A long file is bounded by the upload limit; this only keeps one CSV cell sane.
CSV_FIELD_LIMIT = 16 * 1024 * 1024


@dataclass(frozen=True)
class LineError:
    """One problem of a long file: the line (0: the whole file), the column ("" if none)."""

    line: int
    column: str
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"line": self.line, "column": self.column, "reason": self.reason}

    def __str__(self) -> str:
        where = f"line {self.line}" if self.line else "file"
        return (
            f"{where}, column {self.column}: {self.reason}"
            if self.column
            else (f"{where}: {self.reason}")
        )


@dataclass(frozen=True)
class LongRecord:
    """One line of a long file: its cells by column name, as text (JSON numbers too)."""

    line: int
    cells: dict[str, str]


@dataclass
class LongFile:
    file_format: str
    records: list[LongRecord] = field(default_factory=list)
    errors: list[LineError] = field(default_factory=list)


def detect_format(*, name: str, data: bytes) -> str:
    """ "csv" or "jsonl": from the file name's extension, else from the first character."""
    lower = name.lower()
    if lower.endswith(".csv"):
        return "csv"
    if lower.endswith(JSONL_SUFFIXES):
        return "jsonl"
    start = data.lstrip(codecs.BOM_UTF8).lstrip()
    return "jsonl" if start.startswith(b"{") else "csv"


def read_long_file(
    data: bytes,
    *,
    name: str,
    required: Sequence[str],
    optional: Sequence[str] = (),
    aliases: dict[str, str] | None = None,
) -> LongFile:
    """The file's records with every column of `required` and `optional` (missing optional
    ones as ""), and every problem found. `aliases` maps other accepted names to columns."""
    file_format = detect_format(name=name, data=data)
    reader = _Reader(required=required, optional=optional, aliases=aliases or {})
    parsed = LongFile(file_format=file_format)
    if not data.strip(codecs.BOM_UTF8 + b" \r\n\t"):
        parsed.errors.append(LineError(0, "", "the file is empty"))
        return parsed
    if file_format == "csv":
        reader.csv(data, parsed)
    else:
        reader.jsonl(data, parsed)
    parsed.errors.sort(key=lambda e: e.line)
    return parsed


def unquote_cell(text: str) -> str:
    """A cell as written before the site's CSV writer quoted it (see the module docstring)."""
    if text.startswith("'") and text[1:].startswith(FORMULA_TRIGGERS):
        return text[1:]
    return text


class _Reader:
    def __init__(
        self, *, required: Sequence[str], optional: Sequence[str], aliases: dict[str, str]
    ) -> None:
        self.required = tuple(required)
        self.known = tuple(required) + tuple(optional)
        self.aliases = aliases

    def _column(self, name: str) -> str:
        return self.aliases.get(name, name)

    def _complete(self, cells: dict[str, str], line: int, parsed: LongFile) -> None:
        """Append the record, or the errors of its missing required cells."""
        missing = [c for c in self.required if not cells.get(c, "").strip()]
        for column in missing:
            parsed.errors.append(LineError(line, column, "is empty; every line needs one"))
        if not missing:
            full = {c: cells.get(c, "") for c in self.known}
            parsed.records.append(LongRecord(line=line, cells=full))

    # --- CSV ---------------------------------------------------------------------------------

    def csv(self, data: bytes, parsed: LongFile) -> None:
        text = self._decode(data, parsed)
        csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_LIMIT))
        reader = csv.reader(io.StringIO(text, newline=""), strict=True)
        header: list[str] | None = None
        previous = 0
        while True:
            start = previous + 1
            try:
                cells = next(reader)
            except StopIteration:
                break
            except csv.Error as exc:
                reason = f"not valid CSV: {exc}; the rest of the file was not read"
                parsed.errors.append(LineError(start, "", reason))
                break
            previous = reader.line_num
            if not any(cell.strip() for cell in cells):
                continue
            if header is None:
                header = self._header(cells, start, parsed)
                if header is None:
                    return
                continue
            if len(cells) != len(header):
                reason = f"has {len(cells)} fields but the header has {len(header)}"
                parsed.errors.append(LineError(start, "", reason))
                continue
            row = {name: unquote_cell(cell) for name, cell in zip(header, cells, strict=True)}
            self._complete(row, start, parsed)
        if header is None and not parsed.errors:
            parsed.errors.append(LineError(0, "", "no header row"))

    def _decode(self, data: bytes, parsed: LongFile) -> str:
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError:
            # Not UTF-8: name every line that is not, then go on with the rest so that the
            # file's other problems are reported in the same answer.
            for lineno, raw, offset in physical_lines(data):
                try:
                    raw.decode("utf-8")
                except UnicodeDecodeError as exc:
                    parsed.errors.append(LineError(lineno, "", utf8_reason(raw, exc, offset)))
            return data.decode("utf-8-sig", errors="replace")

    def _header(self, cells: list[str], line: int, parsed: LongFile) -> list[str] | None:
        names = [self._column(cell.strip().lower()) for cell in cells]
        problems = []
        seen: set[str] = set()
        for name in names:
            if name in seen:
                problems.append(LineError(line, name, "appears twice in the header"))
            elif name not in self.known:
                expected = ", ".join(self.known)
                reason = f"unknown column {name!r}{suggest(name, self.known)}; known: {expected}"
                problems.append(LineError(line, name, reason))
            seen.add(name)
        for name in self.required:
            if name not in seen:
                problems.append(LineError(line, name, "required column missing from the header"))
        parsed.errors.extend(problems)
        return None if problems else names

    # --- JSONL -------------------------------------------------------------------------------

    def jsonl(self, data: bytes, parsed: LongFile) -> None:
        for lineno, raw, offset in physical_lines(data):
            if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
                raw, offset = raw[3:], 3
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                parsed.errors.append(LineError(lineno, "", utf8_reason(raw, exc, offset)))
                continue
            if not text.strip():
                continue
            try:
                obj = loads(text)
            except ValueError as exc:
                parsed.errors.append(LineError(lineno, "", f"not valid JSON: {exc}"))
                continue
            if not isinstance(obj, dict):
                reason = f"expected a JSON object, got {type_name(obj)}"
                parsed.errors.append(LineError(lineno, "", reason))
                continue
            cells = self._json_cells(obj, lineno, parsed)
            if cells is not None:
                self._complete(cells, lineno, parsed)

    def _json_cells(self, obj: dict[str, Any], line: int, parsed: LongFile) -> dict | None:
        cells: dict[str, str] = {}
        ok = True
        for key, value in obj.items():
            name = self._column(key)
            if name not in self.known:
                expected = ", ".join(self.known)
                reason = f"unknown field {key!r}{suggest(key, self.known)}; known: {expected}"
                parsed.errors.append(LineError(line, key, reason))
                ok = False
            elif name in cells:
                parsed.errors.append(LineError(line, name, "given twice (under two names)"))
                ok = False
            elif value is None:
                cells[name] = ""
            elif isinstance(value, bool):  # a mark such as attention_check
                cells[name] = "true" if value else "false"
            elif isinstance(value, bool) or not isinstance(value, str | int | float):
                reason = f"expected text or a number, got {type_name(value)}"
                parsed.errors.append(LineError(line, name, reason))
                ok = False
            else:
                cells[name] = value if isinstance(value, str) else repr(value)
        return cells if ok else None


def parse_number(text: str) -> float | None:
    """A finite number written as text ("3", "3.5", "3,5" is not one), or None."""
    try:
        value = float(text.strip())
    except ValueError:
        return None
    return value if math.isfinite(value) else None
