"""The import formats by name, and reading a source in one of them."""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from annotation.imports.archive import is_zip
from annotation.imports.csvfile import parse_csv
from annotation.imports.helm import HelmSource, parse_helm_run
from annotation.imports.jsonl import parse_jsonl
from annotation.imports.rows import ParsedImport, read_bytes

FORMATS = ("jsonl", "csv", "helm")
# What the import form offers besides the formats: read the format from the file.
AUTO = "auto"
LABELS = {"jsonl": "JSON Lines", "csv": "CSV", "helm": "a HELM run or suite"}
# Where a format note warns that the chosen format is not what the content looks like.
MISMATCH = "but the file looks like"
# How much of a file detect_format reads.
HEAD_BYTES = 64 * 1024
_EXTENSIONS = {
    ".jsonl": "jsonl",
    ".ndjson": "jsonl",
    ".csv": "csv",
    ".zip": "helm",
}
# Keys of HELM's scenario_state.json, near its start.
_HELM_KEYS = (b'"request_states"', b'"adapter_spec"')


@dataclass(frozen=True)
class Detection:
    """The format a file is read in, and why, in words for the import page."""

    file_format: str
    reason: str
    from_content: bool  # False: the content said nothing clear, the name decided


def detect_format(*, name: str, head: bytes) -> Detection:
    """The format of an upload from its first bytes (HEAD_BYTES of them), and from its name
    where they say nothing clear. The content wins over the name: a CSV file named .jsonl is
    read as CSV (read as JSON Lines, each of its lines would be "not valid JSON")."""
    suffix = Path(name).suffix.lower()
    by_name = _EXTENSIONS.get(suffix)
    if suffix == ".json":
        by_name = "helm" if Path(name).stem == "scenario_state" else "jsonl"
    found = _from_content(head)
    if found is None:
        if by_name is None:
            return Detection(
                "jsonl", "neither the content nor the name tells; read as JSON Lines", False
            )
        return Detection(by_name, f"from the name ({suffix})", False)
    file_format, why = found
    reason = f"from the content: {why}"
    if by_name is not None and by_name != file_format:
        reason += f"; the name ends in {suffix}, which usually means {LABELS[by_name]}"
    return Detection(file_format, reason, True)


def _from_content(head: bytes) -> tuple[str, str] | None:
    if is_zip(head):
        return "helm", "a zip archive (a HELM run directory or suite)"
    text = head.removeprefix(codecs.BOM_UTF8).lstrip(b" \t\r\n\f\v")
    if not text:
        return None
    first_line = text.split(b"\n", 1)[0].strip()
    if text.startswith(b"{"):
        try:
            record = json.loads(first_line)
        except ValueError:
            record = None
        if isinstance(record, dict):
            if "request_states" in record:
                return "helm", "one JSON document with request_states (HELM's scenario_state.json)"
            return "jsonl", "its first line is one JSON object"
        if any(key in text for key in _HELM_KEYS):
            return "helm", "a JSON document over several lines (HELM's scenario_state.json)"
        return None
    if text.startswith(b"["):
        return None  # a JSON array is none of the formats; the name decides, the parse says why
    if b"," in first_line or b";" in first_line:
        return "csv", "its first line is comma-separated, not JSON: a CSV header row"
    return None


def peek(content: bytes | IO[bytes]) -> bytes:
    """The first HEAD_BYTES of an upload, leaving a file where it was; b"" for a source that
    cannot go back (detection then goes by the name)."""
    if isinstance(content, bytes | bytearray | memoryview):
        return bytes(content[:HEAD_BYTES])
    try:
        position = content.tell()
        head = content.read(HEAD_BYTES)
        content.seek(position)
    except (AttributeError, OSError, ValueError):
        return b""
    return head


def parse(
    *,
    file_format: str,
    source: HelmSource,
    name_hint: str = "",
    label: str = "",
    completions: str = "first",
) -> ParsedImport:
    """Dispatch on the format name ("jsonl", "csv" or "helm"); `name_hint` and `label` are
    for HELM runs (see read_helm_run). An unknown name is a bug of the caller (start_import
    checks it), hence a ValueError."""
    if file_format == "helm":
        return parse_helm_run(source, name_hint=name_hint, label=label, completions=completions)
    data = Path(source).read_bytes() if isinstance(source, str | Path) else read_bytes(source)
    if file_format == "jsonl":
        return parse_jsonl(data)
    if file_format == "csv":
        return parse_csv(data)
    raise ValueError(f"unknown import format {file_format!r}; use jsonl, csv or helm")
