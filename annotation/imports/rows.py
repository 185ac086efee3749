"""Rows of an item file: the fields, the row errors, and the checks every format shares.

Fields (JSONL keys and CSV columns): external_id, input, output and model are required
(output may be empty: a model that answered nothing is still rated); reference, task,
benchmark and metadata (a JSON object) are optional. Unknown fields are errors, so that a
typo does not silently drop data. Ids and names lose surrounding whitespace, texts are kept
as given, NUL characters are refused (PostgreSQL cannot store them) and so are JSON
NaN/Infinity, JSON nested too deeply for the parser, and metadata nested more than
MAX_METADATA_DEPTH levels (deeper data would overflow the checks and the database driver's
encoder). Every problem is a RowError naming where it is and why, and parsing goes on
after one, so that one pass reports them all.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import IO, Any

from annotation.models import Item

REQUIRED_FIELDS = ("external_id", "input", "output", "model")
OPTIONAL_FIELDS = ("reference", "task", "benchmark", "metadata")
KNOWN_FIELDS = REQUIRED_FIELDS + OPTIONAL_FIELDS
# Lengths of the Item columns, so that a too-long id fails here with its line rather than in
# the database (SQLite would even store it silently).
MAX_LENGTH = {
    "external_id": Item._meta.get_field("external_id").max_length,
    "model": Item._meta.get_field("model_name").max_length,
    "benchmark": Item._meta.get_field("benchmark").max_length,
}

# Levels of objects and lists metadata may nest (the outer object is level 1).
MAX_METADATA_DEPTH = 64

Source = bytes | IO[bytes]


@dataclass(frozen=True)
class RowError:
    """One problem: where it is and why. `order` sorts errors into file order."""

    where: str
    reason: str
    order: int = field(default=0, compare=False)

    def as_dict(self) -> dict[str, str]:
        return {"where": self.where, "reason": self.reason}

    def __str__(self) -> str:
        return f"{self.where}: {self.reason}"


@dataclass(frozen=True)
class ParsedRow:
    """A row whose fields have the right types; task names are not resolved yet."""

    where: str
    order: int
    external_id: str
    model_name: str
    input_text: str
    output_text: str
    reference_text: str = ""
    benchmark: str = ""
    task: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> tuple[str, str]:
        return (self.external_id, self.model_name)


@dataclass
class ParsedImport:
    """What a parser read: good rows, every error and warning, and how many records it saw."""

    rows: list[ParsedRow] = field(default_factory=list)
    errors: list[RowError] = field(default_factory=list)
    warnings: list[RowError] = field(default_factory=list)
    total: int = 0
    # What a parser counts besides rows, by kind (HELM: failed requests, perturbed
    # instances, ...), for the import summary.
    counts: dict[str, int] = field(default_factory=dict)


# --- helpers of the parsers --------------------------------------------------------------------


def read_bytes(source: Source) -> bytes:
    """The whole source: bytes as they are, a stream read to its end."""
    if isinstance(source, bytes | bytearray | memoryview):
        return bytes(source)
    return source.read()


def physical_lines(data: bytes) -> Iterator[tuple[int, bytes, int]]:
    """(line number from 1, raw line without its newline, byte offset of the line)."""
    offset = 0
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        yield lineno, raw, offset
        offset += len(raw) + 1


def utf8_reason(raw: bytes, exc: UnicodeDecodeError, line_offset: int) -> str:
    return (
        f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at byte offset {line_offset + exc.start} "
        "of the file); save the file as UTF-8"
    )


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not allowed")


def loads(text: str) -> Any:
    """json.loads without NaN/Infinity; raises ValueError with a short reason (also for
    JSON nested too deeply to parse, which json.loads answers with a RecursionError)."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise ValueError("nested too deeply (lists and objects inside one another)") from None
    except json.JSONDecodeError as exc:
        position = (
            f"line {exc.lineno}, column {exc.colno}" if exc.lineno > 1 else f"column {exc.colno}"
        )
        raise ValueError(f"{exc.msg} ({position})") from None


def suggest(name: str, choices: Iterable[str]) -> str:
    """' (did you mean ...?)' naming the closest choice, or ''."""
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


_TYPE_NAMES = {
    dict: "an object",
    list: "a list",
    str: "a string",
    bool: "true/false",
    int: "a number",
    float: "a decimal number",
    type(None): "null",
}


def type_name(value: Any) -> str:
    """The JSON type of a value as a user reads it ("a list", "null")."""
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def unknown_fields_reason(unknown: Iterable[str], *, noun: str) -> str:
    parts = [f"{name!r}{suggest(name, KNOWN_FIELDS)}" for name in sorted(unknown)]
    return (
        f"unknown {noun}{'s' if len(parts) > 1 else ''} {', '.join(parts)}; "
        f"known: {', '.join(KNOWN_FIELDS)}; put extra data in 'metadata'"
    )


# --- one record's fields -----------------------------------------------------------------------


@dataclass(frozen=True)
class _TextField:
    name: str
    required: bool
    strip: bool  # ids and names lose surrounding whitespace; texts are kept as given
    allow_empty: bool = True


# In the order their problems are reported.
_TEXT_FIELDS = (
    _TextField("external_id", required=True, strip=True, allow_empty=False),
    _TextField("input", required=True, strip=False, allow_empty=False),
    _TextField("output", required=True, strip=False),
    _TextField("model", required=True, strip=True, allow_empty=False),
    _TextField("reference", required=False, strip=False),
    _TextField("task", required=False, strip=True),
    _TextField("benchmark", required=False, strip=True),
)


def _text(value: Any, spec: _TextField, reasons: list[str]) -> str:
    """The field's text, or "" after appending why it cannot be used."""
    name = spec.name
    if value is None:
        if spec.required:
            reasons.append(f"missing required field {name!r}")
        return ""
    if name == "external_id" and isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    if not isinstance(value, str):
        allowed = "a string or an integer" if name == "external_id" else "a string"
        reasons.append(f"field {name!r} must be {allowed}, got {type_name(value)}")
        return ""
    if "\x00" in value:
        reasons.append(f"field {name!r} contains a NUL character")
        return ""
    if spec.strip:
        value = value.strip()
    if spec.required and not spec.allow_empty and not value.strip():
        reasons.append(f"field {name!r} is empty")
        return ""
    limit = MAX_LENGTH.get(name)
    if limit is not None and len(value) > limit:
        reasons.append(f"field {name!r} is longer than {limit} characters ({len(value)})")
        return ""
    return value


def _metadata_problem(metadata: dict[str, Any]) -> str | None:
    """Why the metadata cannot be stored (nested too deeply, a NUL character), or None.
    Walks the data without recursion, so that no depth can overflow the stack."""
    pending: list[tuple[Any, int]] = [(metadata, 1)]
    while pending:
        value, depth = pending.pop()
        if isinstance(value, str):
            if "\x00" in value:
                return "metadata contains a NUL character"
            continue
        if isinstance(value, dict | list):
            if depth > MAX_METADATA_DEPTH:
                return f"metadata is nested more than {MAX_METADATA_DEPTH} levels deep"
            if isinstance(value, dict):
                pending.extend((key, depth) for key in value)
                pending.extend((inner, depth + 1) for inner in value.values())
            else:
                pending.extend((inner, depth + 1) for inner in value)
    return None


def _metadata(value: Any, reasons: list[str]) -> dict[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        reasons.append(f"metadata must be a JSON object, got {type_name(value)}")
    elif (problem := _metadata_problem(value)) is not None:
        reasons.append(problem)
    return value


def clean_row(
    fields: Mapping[str, Any],
    *,
    where: str,
    order: int,
    parsed: ParsedImport,
    empty_output: str = "empty output",
) -> ParsedRow | None:
    """Check one record's fields (already named canonically) and make a ParsedRow.

    `fields` may lack keys (missing) or hold None (JSON null). Appends every problem of the
    record to parsed.errors and returns None if there was any; an empty output is a warning.
    """
    reasons: list[str] = []
    texts = {spec.name: _text(fields.get(spec.name), spec, reasons) for spec in _TEXT_FIELDS}
    metadata = _metadata(fields.get("metadata"), reasons)
    if reasons:
        parsed.errors.extend(RowError(where, r, order) for r in reasons)
        return None
    if not texts["output"].strip():
        reason = f"{empty_output} (imported: a model that answered nothing is still rated)"
        parsed.warnings.append(RowError(where, reason, order))
    return ParsedRow(
        where=where,
        order=order,
        external_id=texts["external_id"],
        model_name=texts["model"],
        input_text=texts["input"],
        output_text=texts["output"],
        reference_text=texts["reference"],
        benchmark=texts["benchmark"],
        task=texts["task"],
        metadata=metadata,
    )
