"""CSV item files: a header row naming the fields, then one record per item.

Header names are matched case-insensitively (spreadsheets capitalise them); "id" means
external_id; columns "meta.<key>" are collected into metadata as strings. Errors name
"row N (line L)": N counts data records from 1, L is the physical line where the record
starts (a quoted field may hold newlines).
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterator
from typing import Any

from annotation.imports.rows import (
    KNOWN_FIELDS,
    REQUIRED_FIELDS,
    ParsedImport,
    RowError,
    Source,
    clean_row,
    loads,
    physical_lines,
    read_bytes,
    unknown_fields_reason,
    utf8_reason,
)

META_PREFIX = "meta."
# A clinical note can be long; the csv module's default cap (128 KiB per field) is not enough.
CSV_FIELD_LIMIT = 64 * 1024 * 1024


def parse_csv(stream: Source) -> ParsedImport:
    """Read a CSV file into rows; see the module docstring."""
    parsed = ParsedImport()
    text, bad_lines = _decode(read_bytes(stream), parsed)
    if not text.strip():
        parsed.errors.append(RowError("file", "the file is empty (a CSV needs a header row)", 0))
        return parsed
    csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_LIMIT))
    names: list[str] | None = None
    row_number = 0
    for start, end, cells in _records(text):
        if isinstance(cells, csv.Error):
            where = f"row {row_number + 1} (line {start})" if names else f"line {start}"
            reason = f"not valid CSV: {cells}; the rest of the file was not read"
            parsed.errors.append(RowError(where, reason, start))
            parsed.total += 1
            break
        # A record on a line that is not UTF-8 is dropped: its error is reported already.
        on_bad_line = bool(bad_lines) and any(n in bad_lines for n in range(start, end + 1))
        if names is None:
            names = None if on_bad_line else _header(cells, parsed, f"header (line {start})")
            if names is None:
                return parsed
            continue
        row_number += 1
        parsed.total += 1
        if not on_bad_line:
            where = f"row {row_number} (line {start})"
            _read_record(names, cells, where=where, order=start, parsed=parsed)
    if names is None and not parsed.errors:
        parsed.errors.append(RowError("file", "no header row", 0))
    parsed.errors.sort(key=lambda e: e.order)  # encoding errors were found first
    return parsed


def _decode(data: bytes, parsed: ParsedImport) -> tuple[str, set[int]]:
    """The text, and the physical line numbers that are not UTF-8 (each reported once)."""
    try:
        return data.decode("utf-8-sig"), set()
    except UnicodeDecodeError:
        pass
    bad: set[int] = set()
    for lineno, raw, line_offset in physical_lines(data):
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad.add(lineno)
            reason = utf8_reason(raw, exc, line_offset)
            parsed.errors.append(RowError(f"line {lineno}", reason, lineno))
    # Go on with replacement characters so that the other rows are still checked.
    return data.decode("utf-8-sig", errors="replace"), bad


def _records(text: str) -> Iterator[tuple[int, int, list[str] | csv.Error]]:
    """(first line, last line, cells) of each record that is not blank; a record that is
    not valid CSV comes as the csv.Error, and is the last."""
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    previous_line = 0
    while True:
        start = previous_line + 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            yield start, start, exc
            return
        previous_line = reader.line_num
        if any(cell.strip() for cell in cells):  # else a blank line or a row of commas
            yield start, reader.line_num, cells


def _header(cells: list[str], parsed: ParsedImport, where: str) -> list[str] | None:
    """Canonical column names, or None after reporting what is wrong with the header."""
    names: list[str] = []
    problems: list[str] = []
    for cell in cells:
        name = cell.strip()
        if name.lower().startswith(META_PREFIX):
            key = name[len(META_PREFIX) :].strip()
            if not key:
                problems.append("column 'meta.' needs a key after the dot")
            names.append(META_PREFIX + key)
        else:
            name = name.lower()
            names.append("external_id" if name == "id" else name)
    problems += _header_problems(names)
    for problem in problems:
        parsed.errors.append(RowError(where, problem, 0))
    return None if problems else names


def _header_problems(names: list[str]) -> list[str]:
    problems: list[str] = []
    seen: set[str] = set()
    for name in names:
        if name in seen:
            problems.append(f"column {name!r} appears twice")
        seen.add(name)
    unknown = {n for n in names if n not in KNOWN_FIELDS and not n.startswith(META_PREFIX)}
    if unknown:
        problems.append(unknown_fields_reason(unknown, noun="column"))
    missing = [n for n in REQUIRED_FIELDS if n not in seen]
    if missing:
        problems.append(f"missing required column{'s' if len(missing) > 1 else ''} {missing}")
    return problems


def _read_record(
    names: list[str], cells: list[str], *, where: str, order: int, parsed: ParsedImport
) -> None:
    if len(cells) != len(names):
        reason = f"has {len(cells)} fields but the header has {len(names)}"
        parsed.errors.append(RowError(where, reason, order))
        return
    fields, reasons = _fields(names, cells)
    if reasons:
        parsed.errors.extend(RowError(where, r, order) for r in reasons)
        return
    row = clean_row(fields, where=where, order=order, parsed=parsed)
    if row is not None:
        parsed.rows.append(row)


def _fields(names: list[str], cells: list[str]) -> tuple[dict[str, Any], list[str]]:
    """The record as named fields (an empty optional cell is no value), and its problems."""
    fields: dict[str, Any] = {}
    meta_columns: dict[str, str] = {}
    reasons: list[str] = []
    for name, cell in zip(names, cells, strict=True):
        if name.startswith(META_PREFIX):
            if cell != "":
                meta_columns[name[len(META_PREFIX) :]] = cell
        elif name == "metadata":
            if cell.strip():
                try:
                    fields["metadata"] = loads(cell)
                except ValueError as exc:
                    reasons.append(f"metadata is not valid JSON: {exc}")
        elif name not in ("reference", "task", "benchmark") or cell != "":
            fields[name] = cell
    if meta_columns:
        reasons += _merge_meta_columns(fields, meta_columns)
    return fields, reasons


def _merge_meta_columns(fields: dict[str, Any], meta_columns: dict[str, str]) -> list[str]:
    metadata = fields.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        return []  # clean_row reports a metadata cell that is not an object
    reasons = [
        f"metadata key {key!r} is given both in the metadata column and in column 'meta.{key}'"
        for key in meta_columns
        if key in metadata
    ]
    metadata.update(meta_columns)
    return reasons
