"""JSONL item files: one JSON object per line, keyed by the field names (or "id")."""

from __future__ import annotations

import codecs
from typing import Any

from annotation.imports.rows import (
    KNOWN_FIELDS,
    ParsedImport,
    RowError,
    Source,
    clean_row,
    loads,
    physical_lines,
    read_bytes,
    type_name,
    unknown_fields_reason,
    utf8_reason,
)


def parse_jsonl(stream: Source) -> ParsedImport:
    """One JSON object per line; blank lines are skipped. Errors name "line N"."""
    parsed = ParsedImport()
    for lineno, raw, line_offset in physical_lines(read_bytes(stream)):
        if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
            raw, line_offset = raw[3:], 3
        where = f"line {lineno}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            parsed.total += 1
            parsed.errors.append(RowError(where, utf8_reason(raw, exc, line_offset), lineno))
            continue
        if not line.strip():
            continue
        parsed.total += 1
        fields = _fields(line, where=where, lineno=lineno, parsed=parsed)
        if fields is None:
            continue
        row = clean_row(fields, where=where, order=lineno, parsed=parsed)
        if row is not None:
            parsed.rows.append(row)
    return parsed


def _fields(line: str, *, where: str, lineno: int, parsed: ParsedImport) -> dict[str, Any] | None:
    """The line's object with "id" renamed to external_id, or None after reporting why not.

    Keys are matched exactly (unlike CSV headers): a JSONL file is written by a program.
    """
    try:
        obj = loads(line)
    except ValueError as exc:
        parsed.errors.append(RowError(where, f"not valid JSON: {exc}", lineno))
        return None
    reason = None
    if not isinstance(obj, dict):
        reason = f"expected a JSON object, got {type_name(obj)}"
    elif "id" in obj and "external_id" in obj:
        reason = "give either 'id' or 'external_id', not both"
    else:
        if "id" in obj:
            obj["external_id"] = obj.pop("id")
        unknown = set(obj) - set(KNOWN_FIELDS)
        if unknown:
            reason = unknown_fields_reason(unknown, noun="field")
    if reason is not None:
        parsed.errors.append(RowError(where, reason, lineno))
        return None
    return obj
