"""Reading item files into checked rows: JSONL, CSV and HELM run directories. No writes.

Fields (the same names in JSONL keys and CSV columns):
    external_id  required  the case id (JSONL may call it "id"; a JSON integer is accepted);
                           an item is unique per (external_id, model) within a study
    input        required  the prompt or case text; must not be empty
    output       required  the model's answer; may be empty (a model that answered nothing is
                           still rated), which adds a warning
    model        required  the evaluated model (hidden from clinicians)
    reference    optional  the gold answer
    task         optional  a node name of the study's taxonomy version (a task, else a
                           subcategory, else a category, by exact name)
    benchmark    optional  e.g. "medi_qa"
    metadata     optional  a JSON object (CSV: a cell holding a JSON object); CSV columns named
                           "meta.<key>" are collected into metadata as strings

Decisions worth knowing:
- Unknown JSONL keys and CSV columns are errors, so that a typo such as "refernce" does not
  silently drop data; extra data belongs in "metadata". CSV column names are matched
  case-insensitively (spreadsheets capitalise headers); JSONL keys exactly.
- Ids, model, task and benchmark names lose surrounding whitespace; texts are kept as given.
  NUL characters are rejected anywhere (PostgreSQL cannot store them).
- A file that is not UTF-8 is reported per bad line with the byte offset. A UTF-8 BOM is fine.
- JSON NaN/Infinity are rejected (they are not JSON, and PostgreSQL refuses them in jsonb).
- HELM: see parse_helm_run.

Every problem becomes a RowError naming where it is ("line 17", "row 5 (line 6)",
"request_states[3]") and why; parsing goes on after an error so that one pass reports all.
"""

from __future__ import annotations

import codecs
import csv
import difflib
import hashlib
import io
import json
import zipfile
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from annotation.models import Item
from annotation.services import ItemRow

REQUIRED_FIELDS = ("external_id", "input", "output", "model")
OPTIONAL_FIELDS = ("reference", "task", "benchmark", "metadata")
KNOWN_FIELDS = REQUIRED_FIELDS + OPTIONAL_FIELDS
META_PREFIX = "meta."
# Lengths of the Item columns, so that a too-long id fails here with its line rather than in
# the database (SQLite would even store it silently).
MAX_LENGTH = {
    "external_id": Item._meta.get_field("external_id").max_length,
    "model": Item._meta.get_field("model_name").max_length,
    "benchmark": Item._meta.get_field("benchmark").max_length,
}
# A clinical note can be long; the csv module's default cap (128 KiB per field) is not enough.
CSV_FIELD_LIMIT = 64 * 1024 * 1024
# A zip member larger than this is refused before it is read (a zip bomb would fill memory).
MAX_HELM_JSON_BYTES = 1024 * 1024 * 1024
ZIP_MAGIC = b"PK\x03\x04"

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


# --- shared field checks ---------------------------------------------------------------------


def _read_bytes(source: Source) -> bytes:
    if isinstance(source, bytes | bytearray | memoryview):
        return bytes(source)
    return source.read()


def _utf8_reason(raw: bytes, exc: UnicodeDecodeError, line_offset: int) -> str:
    return (
        f"not valid UTF-8 (byte 0x{raw[exc.start]:02x} at byte offset {line_offset + exc.start} "
        "of the file); save the file as UTF-8"
    )


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not allowed")


def _loads(text: str) -> Any:
    """json.loads without NaN/Infinity; raises ValueError with a short reason."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as exc:
        position = (
            f"line {exc.lineno}, column {exc.colno}" if exc.lineno > 1 else f"column {exc.colno}"
        )
        raise ValueError(f"{exc.msg} ({position})") from None


def _has_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_has_nul(k) or _has_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_has_nul(v) for v in value)
    return False


def _suggest(name: str, choices: Iterable[str]) -> str:
    close = difflib.get_close_matches(name, list(choices), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _type_name(value: Any) -> str:
    return {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "true/false",
        int: "a number",
        float: "a decimal number",
        type(None): "null",
    }.get(type(value), type(value).__name__)


def _clean_row(
    fields: Mapping[str, Any],
    *,
    where: str,
    order: int,
    parsed: ParsedImport,
    empty_output: str = "empty output",
) -> ParsedRow | None:
    """Check one record's fields (already named canonically) and make a ParsedRow.

    `fields` may lack keys (missing) or hold None (JSON null). Appends every problem of the
    record to parsed.errors and returns None if there was any.
    """
    reasons: list[str] = []

    def text(name: str, *, required: bool, strip: bool, allow_empty: bool = True) -> str:
        value = fields.get(name)
        if value is None:
            if required:
                reasons.append(f"missing required field {name!r}")
            return ""
        if name == "external_id" and isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if not isinstance(value, str):
            allowed = "a string or an integer" if name == "external_id" else "a string"
            reasons.append(f"field {name!r} must be {allowed}, got {_type_name(value)}")
            return ""
        if "\x00" in value:
            reasons.append(f"field {name!r} contains a NUL character")
            return ""
        if strip:
            value = value.strip()
        if required and not allow_empty and not value.strip():
            reasons.append(f"field {name!r} is empty")
            return ""
        limit = MAX_LENGTH.get(name)
        if limit is not None and len(value) > limit:
            reasons.append(f"field {name!r} is longer than {limit} characters ({len(value)})")
            return ""
        return value

    external_id = text("external_id", required=True, strip=True, allow_empty=False)
    input_text = text("input", required=True, strip=False, allow_empty=False)
    output_text = text("output", required=True, strip=False)
    model_name = text("model", required=True, strip=True, allow_empty=False)
    reference_text = text("reference", required=False, strip=False)
    task = text("task", required=False, strip=True)
    benchmark = text("benchmark", required=False, strip=True)
    metadata = fields.get("metadata")
    if metadata is None:
        metadata = {}
    elif not isinstance(metadata, dict):
        reasons.append(f"metadata must be a JSON object, got {_type_name(metadata)}")
    elif _has_nul(metadata):
        reasons.append("metadata contains a NUL character")
    if reasons:
        parsed.errors.extend(RowError(where, r, order) for r in reasons)
        return None
    if not output_text.strip():
        reason = f"{empty_output} (imported: a model that answered nothing is still rated)"
        parsed.warnings.append(RowError(where, reason, order))
    return ParsedRow(
        where=where,
        order=order,
        external_id=external_id,
        model_name=model_name,
        input_text=input_text,
        output_text=output_text,
        reference_text=reference_text,
        benchmark=benchmark,
        task=task,
        metadata=metadata,
    )


def _unknown_fields_reason(unknown: Iterable[str], *, noun: str) -> str:
    parts = [f"{name!r}{_suggest(name, KNOWN_FIELDS)}" for name in sorted(unknown)]
    return (
        f"unknown {noun}{'s' if len(parts) > 1 else ''} {', '.join(parts)}; "
        f"known: {', '.join(KNOWN_FIELDS)}; put extra data in 'metadata'"
    )


# --- JSONL -----------------------------------------------------------------------------------


def parse_jsonl(stream: Source) -> ParsedImport:
    """One JSON object per line; blank lines are skipped. Errors name "line N"."""
    data = _read_bytes(stream)
    parsed = ParsedImport()
    offset = 0
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        line_offset, offset = offset, offset + len(raw) + 1
        if lineno == 1 and raw.startswith(codecs.BOM_UTF8):
            raw, line_offset = raw[3:], 3
        where = f"line {lineno}"
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            parsed.total += 1
            parsed.errors.append(RowError(where, _utf8_reason(raw, exc, line_offset), lineno))
            continue
        if not line.strip():
            continue
        parsed.total += 1
        try:
            obj = _loads(line)
        except ValueError as exc:
            parsed.errors.append(RowError(where, f"not valid JSON: {exc}", lineno))
            continue
        if not isinstance(obj, dict):
            parsed.errors.append(
                RowError(where, f"expected a JSON object, got {_type_name(obj)}", lineno)
            )
            continue
        if "id" in obj:
            if "external_id" in obj:
                parsed.errors.append(
                    RowError(where, "give either 'id' or 'external_id', not both", lineno)
                )
                continue
            obj["external_id"] = obj.pop("id")
        unknown = set(obj) - set(KNOWN_FIELDS)
        if unknown:
            parsed.errors.append(
                RowError(where, _unknown_fields_reason(unknown, noun="field"), lineno)
            )
            continue
        row = _clean_row(obj, where=where, order=lineno, parsed=parsed)
        if row is not None:
            parsed.rows.append(row)
    return parsed


# --- CSV -------------------------------------------------------------------------------------


def _decode_lines(data: bytes, parsed: ParsedImport) -> tuple[str, set[int]]:
    """The text, and the physical line numbers that are not UTF-8 (each reported once)."""
    try:
        return data.decode("utf-8-sig"), set()
    except UnicodeDecodeError:
        pass
    bad: set[int] = set()
    offset = 0
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        line_offset, offset = offset, offset + len(raw) + 1
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad.add(lineno)
            reason = _utf8_reason(raw, exc, line_offset)
            parsed.errors.append(RowError(f"line {lineno}", reason, lineno))
    # Go on with replacement characters so that the other rows are still checked; the rows
    # on bad lines are dropped (their error is already reported).
    return data.decode("utf-8-sig", errors="replace"), bad


def _csv_header(cells: list[str], parsed: ParsedImport, where: str) -> list[str] | None:
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
            continue
        name = name.lower()
        names.append("external_id" if name == "id" else name)
    seen: set[str] = set()
    for name in names:
        if name in seen:
            problems.append(f"column {name!r} appears twice")
        seen.add(name)
    unknown = {n for n in names if n not in KNOWN_FIELDS and not n.startswith(META_PREFIX)}
    if unknown:
        problems.append(_unknown_fields_reason(unknown, noun="column"))
    missing = [n for n in REQUIRED_FIELDS if n not in seen]
    if missing:
        problems.append(f"missing required column{'s' if len(missing) > 1 else ''} {missing}")
    for problem in problems:
        parsed.errors.append(RowError(where, problem, 0))
    return None if problems else names


def _csv_fields(names: list[str], cells: list[str]) -> tuple[dict[str, Any], list[str]]:
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
                    fields["metadata"] = _loads(cell)
                except ValueError as exc:
                    reasons.append(f"metadata is not valid JSON: {exc}")
        elif name in ("reference", "task", "benchmark") and cell == "":
            continue
        else:
            fields[name] = cell
    if meta_columns:
        metadata = fields.setdefault("metadata", {})
        if isinstance(metadata, dict):
            for key, value in meta_columns.items():
                if key in metadata:
                    reasons.append(
                        f"metadata key {key!r} is given both in the metadata column and in "
                        f"column 'meta.{key}'"
                    )
                metadata[key] = value
    return fields, reasons


def parse_csv(stream: Source) -> ParsedImport:
    """A header row, then one record per item. Errors name "row N (line L)", where N counts
    data records from 1 and L is the physical line where the record starts (a quoted field
    may hold newlines)."""
    data = _read_bytes(stream)
    parsed = ParsedImport()
    text, bad_lines = _decode_lines(data, parsed)
    if not text.strip():
        parsed.errors.append(RowError("file", "the file is empty (a CSV needs a header row)", 0))
        return parsed
    csv.field_size_limit(max(csv.field_size_limit(), CSV_FIELD_LIMIT))
    reader = csv.reader(io.StringIO(text, newline=""), strict=True)
    names: list[str] | None = None
    row_number = 0
    previous_line = 0
    while True:
        start = previous_line + 1
        try:
            cells = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            where = f"row {row_number + 1} (line {start})" if names else f"line {start}"
            parsed.errors.append(
                RowError(where, f"not valid CSV: {exc}; the rest of the file was not read", start)
            )
            parsed.total += 1
            break
        previous_line = reader.line_num
        if not any(cell.strip() for cell in cells):
            continue  # blank line, or a spreadsheet's empty row of commas
        spans_bad_line = bool(bad_lines) and any(
            n in bad_lines for n in range(start, reader.line_num + 1)
        )
        if names is None:
            if spans_bad_line:
                return parsed
            names = _csv_header(cells, parsed, f"header (line {start})")
            if names is None:
                return parsed
            continue
        row_number += 1
        parsed.total += 1
        if spans_bad_line:
            continue
        where = f"row {row_number} (line {start})"
        if len(cells) != len(names):
            parsed.errors.append(
                RowError(where, f"has {len(cells)} fields but the header has {len(names)}", start)
            )
            continue
        fields, reasons = _csv_fields(names, cells)
        if reasons:
            parsed.errors.extend(RowError(where, r, start) for r in reasons)
            continue
        row = _clean_row(fields, where=where, order=start, parsed=parsed)
        if row is not None:
            parsed.rows.append(row)
    if names is None and not parsed.errors:
        parsed.errors.append(RowError("file", "no header row", 0))
    parsed.errors.sort(key=lambda e: e.order)  # encoding errors were found first
    return parsed


# --- HELM ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _HelmFiles:
    scenario_state: bytes | None
    run_spec: bytes | None
    run_name: str
    error: str = ""


def _helm_files_from_zip(data: bytes, name_hint: str) -> _HelmFiles:
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except zipfile.BadZipFile as exc:
        return _HelmFiles(None, None, "", f"not a readable zip file: {exc}")
    with archive:
        members = [
            info
            for info in archive.infolist()
            if PurePosixPath(info.filename).name == "scenario_state.json"
            and not info.filename.startswith("__MACOSX/")
        ]
        if not members:
            return _HelmFiles(None, None, "", "no scenario_state.json in the zip")
        if len(members) > 1:
            found = ", ".join(m.filename for m in members[:5])
            return _HelmFiles(
                None,
                None,
                "",
                f"the zip holds {len(members)} scenario_state.json files ({found}); "
                "upload one run directory at a time",
            )
        state = members[0]
        folder = PurePosixPath(state.filename).parent
        spec_name = str(folder / "run_spec.json") if str(folder) != "." else "run_spec.json"
        spec = next((i for i in archive.infolist() if i.filename == spec_name), None)
        for info in (state, spec):
            if info is not None and info.file_size > MAX_HELM_JSON_BYTES:
                return _HelmFiles(None, None, "", f"{info.filename} is too large to import")
        return _HelmFiles(
            scenario_state=archive.read(state),
            run_spec=archive.read(spec) if spec is not None else None,
            run_name=folder.name if str(folder) != "." else name_hint,
        )


def _helm_files(source: str | Path | Source, name_hint: str) -> _HelmFiles:
    if isinstance(source, str | Path):
        path = Path(source)
        if path.is_dir():
            spec = path / "run_spec.json"
            state = path / "scenario_state.json"
            if not state.is_file():
                return _HelmFiles(None, None, "", f"no scenario_state.json in {path}")
            return _HelmFiles(
                state.read_bytes(), spec.read_bytes() if spec.is_file() else None, path.name
            )
        data = path.read_bytes()
        if data.startswith(ZIP_MAGIC):
            return _helm_files_from_zip(data, name_hint or path.stem)
        spec = path.parent / "run_spec.json"
        return _HelmFiles(data, spec.read_bytes() if spec.is_file() else None, path.parent.name)
    data = _read_bytes(source)
    if data.startswith(ZIP_MAGIC):
        return _helm_files_from_zip(data, name_hint)
    return _HelmFiles(data, None, name_hint)


def _load_helm_json(data: bytes, name: str) -> tuple[Any, str]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return None, f"{name} line {line}: " + _utf8_reason(data, exc, 0)
    try:
        return _loads(text), ""
    except ValueError as exc:
        return None, f"{name} is not valid JSON: {exc}"


def _dig(obj: Any, *path: str | int) -> Any:
    """obj[path[0]][path[1]]..., or None where a step is missing or of the wrong type."""
    for step in path:
        if isinstance(step, int):
            if not isinstance(obj, list) or len(obj) <= step:
                return None
        elif not isinstance(obj, dict):
            return None
        obj = obj[step] if isinstance(step, int) else obj.get(step)
    return obj


def _helm_reference(references: Any) -> tuple[str, int | None]:
    """The gold answer and its index: the first reference tagged "correct", else the first.

    The issue says "first reference". In HELM's generation scenarios (all of MedHELM's
    open-ended ones) that is the correct answer; in multiple-choice scenarios references are
    the options and only the correct one is tagged, so references[0] would show clinicians a
    wrong option as the reference. Taking the tagged one agrees with "first" wherever the
    first is the correct one.
    """
    if not isinstance(references, list) or not references:
        return "", None
    chosen = next(
        (
            i
            for i, ref in enumerate(references)
            if isinstance(ref, dict) and "correct" in (ref.get("tags") or [])
        ),
        0,
    )
    ref_text = _dig(references, chosen, "output", "text")
    return (ref_text if isinstance(ref_text, str) else ""), chosen


def helm_benchmark_name(*, run_spec: Any, run_name: str) -> str:
    """The benchmark of a HELM run: run_spec "name" up to the first ':' (e.g. "medi_qa"),
    else the run directory's name up to ':'."""
    name = run_spec.get("name") if isinstance(run_spec, dict) else None
    if not isinstance(name, str) or not name.strip():
        name = run_name
    return name.split(":", 1)[0].strip()


def parse_helm_run(source: str | Path | Source, *, name_hint: str = "") -> ParsedImport:
    """A HELM run: a directory, a zip of one, or scenario_state.json itself (path or bytes).

    From each element of request_states: instance.id, instance.input.text, the reference
    (see _helm_reference), result.completions[0].text and request.model; other keys are
    ignored. `name_hint` names the run when the source does not (e.g. the uploaded file name).

    - external_id is "<benchmark>/<instance.id>", e.g. "medi_qa/id101": HELM numbers the
      instances of every scenario id0, id1, ..., so two benchmarks in one study would collide
      on the bare id. metadata keeps helm_instance_id, helm_run and the split.
    - An empty completion is imported (a model that answered nothing is still rated) with a
      warning naming its index. A failed request (result.success false) is skipped with a
      warning: there is no answer to rate, and the run cannot be fixed by hand.
    - Request states of train trials after the first, and perturbed instances, are skipped
      with one warning each: they repeat an instance id and are not separate cases.
    """
    parsed = ParsedImport()
    if name_hint in ("scenario_state", "scenario_state.json"):
        name_hint = ""
    files = _helm_files(source, name_hint)
    if files.error or files.scenario_state is None:
        parsed.errors.append(RowError("file", files.error or "no scenario_state.json", -1))
        return parsed
    run_spec = None
    if files.run_spec is not None:
        run_spec, problem = _load_helm_json(files.run_spec, "run_spec.json")
        if problem:
            parsed.errors.append(RowError("run_spec.json", problem, -1))
    state, problem = _load_helm_json(files.scenario_state, "scenario_state.json")
    if problem:
        parsed.errors.append(RowError("scenario_state.json", problem, -1))
        return parsed
    request_states = _dig(state, "request_states")
    if not isinstance(request_states, list):
        parsed.errors.append(RowError("scenario_state.json", "'request_states' must be a list", -1))
        return parsed
    benchmark = helm_benchmark_name(run_spec=run_spec, run_name=files.run_name)
    if not benchmark:
        parsed.warnings.append(
            RowError(
                "file",
                "no run name (run_spec.json or the run directory's name), so no benchmark: "
                "external ids are the bare instance ids; upload the run directory as a zip",
                -1,
            )
        )
    run_name = run_spec.get("name") if isinstance(run_spec, dict) else None
    run_name = run_name if isinstance(run_name, str) else files.run_name
    skipped_trials: list[int] = []
    skipped_perturbed: list[int] = []
    other_reference: list[int] = []
    for index, request_state in enumerate(request_states):
        where = f"request_states[{index}]"
        parsed.total += 1
        if not isinstance(request_state, dict):
            parsed.errors.append(
                RowError(where, f"expected an object, got {_type_name(request_state)}", index)
            )
            continue
        if isinstance(request_state.get("train_trial_index"), int) and (
            request_state["train_trial_index"] > 0
        ):
            skipped_trials.append(index)
            continue
        if _dig(request_state, "instance", "perturbation"):
            skipped_perturbed.append(index)
            continue
        result = request_state.get("result")
        if isinstance(result, dict) and result.get("success") is False:
            detail = result.get("error")
            parsed.warnings.append(
                RowError(
                    where,
                    "skipped: the request failed" + (f" ({detail})" if detail else ""),
                    index,
                )
            )
            continue
        reasons: list[str] = []
        instance_id = _dig(request_state, "instance", "id")
        if isinstance(instance_id, str):
            instance_id = instance_id.strip()
        if not isinstance(instance_id, str) or not instance_id:
            reasons.append("missing instance.id")
        input_text = _dig(request_state, "instance", "input", "text")
        if not isinstance(input_text, str):
            reasons.append("missing instance.input.text")
        model = _dig(request_state, "request", "model")
        if not isinstance(model, str):
            reasons.append("missing request.model")
        if not isinstance(result, dict):
            reasons.append("missing result")
        if reasons:
            parsed.errors.extend(RowError(where, r, index) for r in reasons)
            continue
        output = _dig(result, "completions", 0, "text")
        if not isinstance(output, str):
            output = ""  # no completion at all: as empty as an empty one
        reference, ref_index = _helm_reference(_dig(request_state, "instance", "references"))
        if ref_index:
            other_reference.append(index)
        metadata: dict[str, Any] = {"helm_instance_id": instance_id, "helm_run": run_name}
        split = _dig(request_state, "instance", "split")
        if isinstance(split, str):
            metadata["split"] = split
        fields = {
            "external_id": f"{benchmark}/{instance_id}" if benchmark else instance_id,
            "input": input_text,
            "output": output,
            "model": model,
            "reference": reference,
            "benchmark": benchmark,
            "metadata": metadata,
        }
        row = _clean_row(
            fields, where=where, order=index, parsed=parsed, empty_output="empty completion"
        )
        if row is not None:
            parsed.rows.append(row)
    for indices, what in (
        (skipped_trials, "skipped: train trials after the first (train_trial_index > 0)"),
        (skipped_perturbed, "skipped: perturbed instances (instance.perturbation)"),
        (
            other_reference,
            "reference taken from the first reference tagged 'correct', not references[0]",
        ),
    ):
        if indices:
            parsed.warnings.append(
                RowError(
                    "request_states",
                    f"{what}: {len(indices)} request state{'s' if len(indices) > 1 else ''} "
                    f"(first request_states[{indices[0]}])",
                    indices[0],
                )
            )
    parsed.warnings.sort(key=lambda w: w.order)
    return parsed


def pack_helm_run(path: str | Path) -> bytes:
    """A zip of a HELM run directory's scenario_state.json and run_spec.json, under the
    directory's name, so that a run can be stored and imported as one file. `path` may be
    the directory or its scenario_state.json."""
    path = Path(path)
    folder = path.parent if path.is_file() else path
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for name in ("scenario_state.json", "run_spec.json"):
            if (folder / name).is_file():
                archive.write(folder / name, f"{folder.name}/{name}")
    return buffer.getvalue()


# --- checks across rows and against the study ------------------------------------------------

Fingerprint = tuple[bytes, bytes, bytes]
TEXT_FIELDS = ("input", "output", "reference")


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).digest()


def item_fingerprint(*, input_text: str, output_text: str, reference_text: str) -> Fingerprint:
    """Digests of an item's texts, to tell an unchanged re-import from a conflicting one
    without keeping every existing text in memory."""
    return (_digest(input_text), _digest(output_text), _digest(reference_text))


def conflict_reason(row: ParsedRow, existing: Fingerprint) -> str | None:
    """Why a row cannot be "unchanged" although its (external_id, model) is in the study."""
    mine = item_fingerprint(
        input_text=row.input_text, output_text=row.output_text, reference_text=row.reference_text
    )
    differ = [name for name, a, b in zip(TEXT_FIELDS, mine, existing, strict=True) if a != b]
    if not differ:
        return None
    return (
        f"external_id {row.external_id!r} with model {row.model_name!r} is already in this "
        f"study with a different {' and '.join(differ)}; an import never changes an existing item"
    )


def validate_rows(
    *,
    parsed: ParsedImport,
    task_names: Mapping[str, int] | None,
    existing: Mapping[tuple[str, str], Fingerprint] | None = None,
    progress: Callable[[int], None] | None = None,
    progress_every: int = 2000,
) -> tuple[list[ItemRow], list[RowError]]:
    """Resolve task names, find duplicates within the file and conflicts with the study.

    `task_names` maps node names of the study's taxonomy version to node ids; None means the
    study has no taxonomy version, so any task value is an error. `existing` maps the study's
    (external_id, model) to item_fingerprint; a key that is there with the same texts is
    returned as a row (create_items counts it "unchanged"), with different texts it is an
    error. Returns the rows ready for create_items and ALL errors (the parser's too), in
    file order. `progress(n)` is called every `progress_every` rows and at the end, with n
    counting the parser's rejected records as done.
    """
    errors = list(parsed.errors)
    rows: list[ItemRow] = []
    first_seen: dict[tuple[str, str], str] = {}
    unknown_tasks: dict[str, str] = {}
    done = parsed.total - len(parsed.rows)
    for n, row in enumerate(parsed.rows, start=1):
        if progress is not None and n % progress_every == 0:
            progress(done + n)
        where = row.where
        if row.key in first_seen:
            errors.append(
                RowError(
                    where,
                    f"external_id {row.external_id!r} with model {row.model_name!r} appears "
                    f"twice in this file (first at {first_seen[row.key]})",
                    row.order,
                )
            )
            continue
        first_seen[row.key] = where
        node_id = None
        if row.task:
            if task_names is None:
                errors.append(
                    RowError(
                        where,
                        f"task {row.task!r} given, but the study has no taxonomy version",
                        row.order,
                    )
                )
                continue
            node_id = task_names.get(row.task)
            if node_id is None:
                if row.task not in unknown_tasks:
                    unknown_tasks[row.task] = _suggest(row.task, task_names)
                errors.append(
                    RowError(
                        where,
                        f"unknown task {row.task!r}: not a node of the study's taxonomy "
                        f"version{unknown_tasks[row.task]}",
                        row.order,
                    )
                )
                continue
        if existing is not None and row.key in existing:
            reason = conflict_reason(row, existing[row.key])
            if reason is not None:
                errors.append(RowError(where, reason, row.order))
                continue
        rows.append(
            ItemRow(
                external_id=row.external_id,
                input_text=row.input_text,
                output_text=row.output_text,
                model_name=row.model_name,
                reference_text=row.reference_text,
                benchmark=row.benchmark,
                taxonomy_node_id=node_id,
                metadata=row.metadata,
            )
        )
    if progress is not None:
        progress(parsed.total)
    errors.sort(key=lambda e: e.order)
    return rows, errors


def parse(*, file_format: str, source: str | Path | Source, name_hint: str = "") -> ParsedImport:
    """Dispatch on the format name ("jsonl", "csv" or "helm")."""
    if file_format == "jsonl":
        return parse_jsonl(Path(source).read_bytes() if isinstance(source, str | Path) else source)
    if file_format == "csv":
        return parse_csv(Path(source).read_bytes() if isinstance(source, str | Path) else source)
    if file_format == "helm":
        return parse_helm_run(source, name_hint=name_hint)
    raise ValueError(f"unknown import format {file_format!r}; use jsonl, csv or helm")


FORMATS = ("jsonl", "csv", "helm")
