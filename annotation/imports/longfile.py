"""Long files of scores (one score per line): CSV or JSONL, read into plain records.

Shared by the ratings import (annotation.services.rating_imports) and the machine scores
import (jury.score_imports): this module knows the two formats and the column names, not
what a value means. Every problem is a LineError naming the line, the column and why, and
reading goes on after one, so that one pass reports them all. A file is read as a stream,
one record at a time, and each problem goes to an ErrorSink as it is found: neither the file
nor its problems are ever held whole.

The format comes from the file name (.csv; .jsonl, .ndjson, .json) or else from the content
(a first character "{" is JSONL). CSV headers are matched case-insensitively; a cell that
starts with an apostrophe before a formula trigger (= + - @ tab CR) is read without the
apostrophe, since that is how the site's CSV writer quotes such text on export.
"""

from __future__ import annotations

import codecs
import csv
import functools
import io
import math
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import IO, Any, Protocol

from annotation.imports.rows import loads, suggest, type_name, utf8_reason
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


class ErrorSink(Protocol):
    """Where the problems of a file go, in line order (longerrors.LineErrors)."""

    def add(self, error: LineError) -> None: ...


LineCallback = Callable[[int], None]
PROGRESS_LINES = 2000  # how often the reader reports the physical line it reached
_BLANK = codecs.BOM_UTF8 + b" \r\n\t"


def detect_format(*, name: str, data: bytes | IO[bytes]) -> str:
    """ "csv" or "jsonl": from the file name's extension, else from the first character
    other than whitespace (a seekable file is read up to it, then put back)."""
    lower = name.lower()
    if lower.endswith(".csv"):
        return "csv"
    if lower.endswith(JSONL_SUFFIXES):
        return "jsonl"
    if isinstance(data, bytes | bytearray | memoryview):
        start = bytes(data).lstrip(codecs.BOM_UTF8).lstrip()
    else:
        start = _first_content(data)
    return "jsonl" if start.startswith(b"{") else "csv"


def _first_content(source: IO[bytes]) -> bytes:
    position = source.tell()
    try:
        first = True
        for chunk in iter(functools.partial(source.read, 64 * 1024), b""):
            rest = (chunk.removeprefix(codecs.BOM_UTF8) if first else chunk).lstrip()
            first = False
            if rest:
                return rest
        return b""
    finally:
        source.seek(position)


def long_records(
    source: bytes | IO[bytes],
    *,
    name: str,
    required: Sequence[str],
    optional: Sequence[str] = (),
    aliases: dict[str, str] | None = None,
    errors: ErrorSink,
    on_line: LineCallback | None = None,
) -> tuple[str, Iterator[LongRecord]]:
    """(the file's format, its records one at a time) with every column of `required` and
    `optional` (missing optional ones as ""). Each problem goes to `errors` as it is found,
    before the record that follows it: the file is read as a stream, never whole, so that a
    file of any size within the upload limit costs one line of memory. `aliases` maps other
    accepted names to columns; `on_line` hears the physical line reached every
    PROGRESS_LINES lines."""
    stream = io.BytesIO(bytes(source)) if isinstance(source, bytes | bytearray) else source
    file_format = detect_format(name=name, data=stream)
    reader = _Reader(required=required, optional=optional, aliases=aliases or {}, errors=errors)
    lines = _Lines(stream, universal=file_format == "csv", errors=errors, on_line=on_line)
    records = reader.csv(lines) if file_format == "csv" else reader.jsonl(lines)
    return file_format, records


class _Lines:
    """The physical lines of a binary stream, decoded: CSV lines end at \\n, \\r\\n or \\r
    (as csv expects of a file opened with newline=""), JSONL lines at \\n. A line that is not
    UTF-8 is reported (line and byte offset) and read with replacement characters, so that
    the rest of the file is checked in the same pass; its report waits in `pending` until
    the reader has taken the record the line belongs to."""

    def __init__(
        self,
        stream: IO[bytes],
        *,
        universal: bool,
        errors: ErrorSink,
        on_line: LineCallback | None,
    ) -> None:
        self.stream = stream
        self.universal = universal
        self.errors = errors
        self.on_line = on_line
        self.number = 0
        self.pending: list[LineError] = []
        self.has_content = False

    def _raw(self) -> Iterator[bytes]:
        for raw in self.stream:  # split at b"\n"
            if self.universal and b"\r" in raw:
                yield from raw.splitlines(keepends=True)
            else:
                yield raw

    def __iter__(self) -> Iterator[str]:
        offset = 0
        for raw in self._raw():
            self.number += 1
            start = offset
            offset += len(raw)
            if self.number == 1 and raw.startswith(codecs.BOM_UTF8):
                raw, start = raw[3:], start + 3
            if not self.has_content and raw.strip(_BLANK):
                self.has_content = True
            if self.on_line is not None and self.number % PROGRESS_LINES == 0:
                self.on_line(self.number)
            try:
                text = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                body = raw.rstrip(b"\r\n")
                reason = utf8_reason(body, exc, start)
                self.pending.append(LineError(self.number, "", reason))
                text = raw.decode("utf-8", errors="replace")
            yield text
        if self.on_line is not None:
            self.on_line(self.number)

    def flush(self) -> None:
        """Report the lines found not UTF-8 so far."""
        for error in self.pending:
            self.errors.add(error)
        self.pending.clear()


def unquote_cell(text: str) -> str:
    """A cell as written before the site's CSV writer quoted it (see the module docstring)."""
    if text.startswith("'") and text[1:].startswith(FORMULA_TRIGGERS):
        return text[1:]
    return text


class _Reader:
    def __init__(
        self,
        *,
        required: Sequence[str],
        optional: Sequence[str],
        aliases: dict[str, str],
        errors: ErrorSink,
    ) -> None:
        self.required = tuple(required)
        self.known = tuple(required) + tuple(optional)
        self.aliases = aliases
        self.errors = errors
        self.reported = 0  # problems of the file's own shape (not of the records' values)

    def _error(self, line: int, column: str, reason: str) -> None:
        self.reported += 1
        self.errors.add(LineError(line, column, reason))

    def _column(self, name: str) -> str:
        return self.aliases.get(name, name)

    def _complete(self, cells: dict[str, str], line: int) -> LongRecord | None:
        """The record, or None after reporting its missing required cells."""
        missing = [c for c in self.required if not cells.get(c, "").strip()]
        for column in missing:
            self._error(line, column, "is empty; every line needs one")
        if missing:
            return None
        return LongRecord(line=line, cells={c: cells.get(c, "") for c in self.known})

    def _empty(self, lines: _Lines) -> bool:
        if lines.has_content:
            return False
        self._error(0, "", "the file is empty")
        return True

    # --- CSV ---------------------------------------------------------------------------------

    def csv(self, lines: _Lines) -> Iterator[LongRecord]:
        csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_LIMIT))
        reader = csv.reader(iter(lines), strict=True)
        header: list[str] | None = None
        previous = 0
        while True:
            start = previous + 1
            try:
                cells = next(reader)
            except StopIteration:
                lines.flush()
                break
            except csv.Error as exc:
                lines.flush()
                reason = f"not valid CSV: {exc}; the rest of the file was not read"
                self._error(start, "", reason)
                break
            lines.flush()
            previous = reader.line_num
            if not any(cell.strip() for cell in cells):
                continue
            if header is None:
                header = self._header(cells, start)
                if header is None:
                    return
                continue
            if len(cells) != len(header):
                self._error(start, "", f"has {len(cells)} fields but the header has {len(header)}")
                continue
            row = {name: unquote_cell(cell) for name, cell in zip(header, cells, strict=True)}
            record = self._complete(row, start)
            if record is not None:
                yield record
        if not self._empty(lines) and header is None and not self.reported:
            self._error(0, "", "no header row")

    def _header(self, cells: list[str], line: int) -> list[str] | None:
        names = [self._column(cell.strip().lower()) for cell in cells]
        problems = 0
        seen: set[str] = set()
        for name in names:
            if name in seen:
                self._error(line, name, "appears twice in the header")
                problems += 1
            elif name not in self.known:
                expected = ", ".join(self.known)
                reason = f"unknown column {name!r}{suggest(name, self.known)}; known: {expected}"
                self._error(line, name, reason)
                problems += 1
            seen.add(name)
        for name in self.required:
            if name not in seen:
                self._error(line, name, "required column missing from the header")
                problems += 1
        return None if problems else names

    # --- JSONL -------------------------------------------------------------------------------

    def jsonl(self, lines: _Lines) -> Iterator[LongRecord]:
        for text in lines:
            lineno = lines.number
            if lines.pending:
                lines.flush()
                continue  # not UTF-8: reported, nothing more to say of this line
            if not text.strip():
                continue
            try:
                obj = loads(text)
            except ValueError as exc:
                self._error(lineno, "", f"not valid JSON: {exc}")
                continue
            if not isinstance(obj, dict):
                self._error(lineno, "", f"expected a JSON object, got {type_name(obj)}")
                continue
            cells = self._json_cells(obj, lineno)
            if cells is not None:
                record = self._complete(cells, lineno)
                if record is not None:
                    yield record
        self._empty(lines)

    def _json_cells(self, obj: dict[str, Any], line: int) -> dict | None:
        cells: dict[str, str] = {}
        ok = True
        for key, value in obj.items():
            name = self._column(key)
            if name not in self.known:
                expected = ", ".join(self.known)
                reason = f"unknown field {key!r}{suggest(key, self.known)}; known: {expected}"
                self._error(line, key, reason)
                ok = False
            elif name in cells:
                self._error(line, name, "given twice (under two names)")
                ok = False
            elif value is None:
                cells[name] = ""
            elif isinstance(value, bool):  # a mark such as attention_check
                cells[name] = "true" if value else "false"
            elif not isinstance(value, str | int | float):
                self._error(line, name, f"expected text or a number, got {type_name(value)}")
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
