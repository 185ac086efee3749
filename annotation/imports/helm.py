"""HELM runs: a run directory, a zip of one, or scenario_state.json itself (path, bytes or
a binary stream).

read_helm_run reads a run's files once into a HelmRun (its request states, run spec and
name); helm_rows turns that into item rows, and the jury reads its verdicts from the same
HelmRun, so that both see the run alike. A zip is read through archive.UploadZip, under the
import limits.
"""

from __future__ import annotations

import io
import zipfile
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import IO, Any

from annotation.errors import AnnotationError
from annotation.imports.archive import ZIP_MAGIC, UploadZip, is_zip
from annotation.imports.rows import (
    ParsedImport,
    RowError,
    Source,
    clean_row,
    loads,
    read_bytes,
    type_name,
    utf8_reason,
)

HelmSource = str | Path | Source

# Request states skipped or read unusually, each reported once with a count.
_SKIPPED_TRIAL = "skipped: train trials after the first (train_trial_index > 0)"
_SKIPPED_PERTURBED = "skipped: perturbed instances (instance.perturbation)"
_OTHER_REFERENCE = "reference taken from the first reference tagged 'correct', not references[0]"


@dataclass(frozen=True)
class HelmRun:
    """A run as read from its files. `request_states` is None when the run cannot be read;
    `problems` are the file-level errors met (order -1), a bad run_spec.json among them."""

    request_states: list[Any] | None
    run_spec: Any = None
    run_name: str = ""
    problems: tuple[RowError, ...] = ()

    @property
    def label(self) -> str:
        """The run's name as items record it: run_spec "name", else the directory name."""
        name = self.run_spec.get("name") if isinstance(self.run_spec, dict) else None
        return name if isinstance(name, str) else self.run_name


def read_helm_run(source: HelmSource, *, name_hint: str = "", label: str = "") -> HelmRun:
    """Read a run's scenario_state.json and run_spec.json. `name_hint` names the run when
    the source does not (e.g. the uploaded file's stem); `label` names the file in the
    problems of a zip (default: the zip)."""
    if name_hint in ("scenario_state", "scenario_state.json"):
        name_hint = ""
    files = _helm_files(source, name_hint, label)
    if files.error or files.scenario_state is None:
        problem = RowError("file", files.error or "no scenario_state.json", -1)
        return HelmRun(None, problems=(problem,))
    return run_from_files(
        scenario_state=files.scenario_state, run_spec=files.run_spec, run_name=files.run_name
    )


def run_from_files(*, scenario_state: bytes, run_spec: bytes | None, run_name: str) -> HelmRun:
    """A run from the bytes of its scenario_state.json and run_spec.json (None: absent)."""
    problems: list[RowError] = []
    spec = None
    if run_spec is not None:
        spec, problem = _load_json(run_spec, "run_spec.json")
        if problem:
            problems.append(RowError("run_spec.json", problem, -1))
    state, problem = _load_json(scenario_state, "scenario_state.json")
    states = _dig(state, "request_states")
    if not problem and not isinstance(states, list):
        problem = "'request_states' must be a list"
    if problem:
        problems.append(RowError("scenario_state.json", problem, -1))
        states = None
    return HelmRun(states, spec, run_name, tuple(problems))


def parse_helm_run(source: HelmSource, *, name_hint: str = "", label: str = "") -> ParsedImport:
    """Item rows of a HELM run; see read_helm_run and helm_rows."""
    return helm_rows(read_helm_run(source, name_hint=name_hint, label=label))


def helm_rows(run: HelmRun) -> ParsedImport:
    """One row per request state: instance.id, instance.input.text, the reference,
    result.completions[0].text and request.model; other keys are ignored.

    external_id is "<benchmark>/<instance.id>" (HELM numbers every scenario's instances id0,
    id1, ..., so two benchmarks in a study would collide on bare ids). An empty completion is
    imported with a warning; a failed request is skipped with one (there is nothing to rate);
    later train trials and perturbed instances repeat an instance and are skipped.
    """
    parsed = ParsedImport(errors=list(run.problems))
    if run.request_states is None:
        return parsed
    benchmark = helm_benchmark_name(run_spec=run.run_spec, run_name=run.run_name)
    if not benchmark:
        reason = (
            "no run name (run_spec.json or the run directory's name), so no benchmark: "
            "external ids are the bare instance ids; upload the run directory as a zip"
        )
        parsed.warnings.append(RowError("file", reason, -1))
    reader = _StateReader(benchmark=benchmark, run_label=run.label, parsed=parsed)
    for index, request_state in enumerate(run.request_states):
        reader.read(index, request_state)
    reader.warn_noted()
    parsed.warnings.sort(key=lambda w: w.order)
    return parsed


def helm_benchmark_name(*, run_spec: Any, run_name: str) -> str:
    """The benchmark of a HELM run: run_spec "name" up to the first ':' (e.g. "medi_qa"),
    else the run directory's name up to ':'."""
    name = run_spec.get("name") if isinstance(run_spec, dict) else None
    if not isinstance(name, str) or not name.strip():
        name = run_name
    return name.split(":", 1)[0].strip()


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


# --- one request state -------------------------------------------------------------------------


@dataclass
class _StateReader:
    """Reads request states into the rows of `parsed`; notes the states skipped or read
    unusually, to report each kind once with a count."""

    benchmark: str
    run_label: str
    parsed: ParsedImport
    noted: dict[str, list[int]] = field(
        default_factory=lambda: {_SKIPPED_TRIAL: [], _SKIPPED_PERTURBED: [], _OTHER_REFERENCE: []}
    )

    def read(self, index: int, state: Any) -> None:
        self.parsed.total += 1
        where = f"request_states[{index}]"
        if not isinstance(state, dict):
            reason = f"expected an object, got {type_name(state)}"
            self.parsed.errors.append(RowError(where, reason, index))
        elif (note := _repeated_instance(state)) is not None:
            self.noted[note].append(index)
        elif (failure := _failed_request(state)) is not None:
            self.parsed.warnings.append(RowError(where, failure, index))
        elif (fields := self._fields(state, where, index)) is not None:
            row = clean_row(
                fields,
                where=where,
                order=index,
                parsed=self.parsed,
                empty_output="empty completion",
            )
            if row is not None:
                self.parsed.rows.append(row)

    def warn_noted(self) -> None:
        for what, indices in self.noted.items():
            if indices:
                count = f"{len(indices)} request state{'s' if len(indices) > 1 else ''}"
                reason = f"{what}: {count} (first request_states[{indices[0]}])"
                self.parsed.warnings.append(RowError("request_states", reason, indices[0]))

    def _fields(self, state: dict[str, Any], where: str, index: int) -> dict[str, Any] | None:
        """The item's fields, or None after reporting what the state lacks."""
        instance_id = _dig(state, "instance", "id")
        if isinstance(instance_id, str):
            instance_id = instance_id.strip()
        input_text = _dig(state, "instance", "input", "text")
        model = _dig(state, "request", "model")
        result = state.get("result")
        lacks = [
            reason
            for reason, ok in (
                ("missing instance.id", isinstance(instance_id, str) and instance_id),
                ("missing instance.input.text", isinstance(input_text, str)),
                ("missing request.model", isinstance(model, str)),
                ("missing result", isinstance(result, dict)),
            )
            if not ok
        ]
        if lacks:
            self.parsed.errors.extend(RowError(where, r, index) for r in lacks)
            return None
        output = _dig(result, "completions", 0, "text")
        reference, ref_index = _reference(_dig(state, "instance", "references"))
        if ref_index:
            self.noted[_OTHER_REFERENCE].append(index)
        metadata: dict[str, Any] = {"helm_instance_id": instance_id, "helm_run": self.run_label}
        split = _dig(state, "instance", "split")
        if isinstance(split, str):
            metadata["split"] = split
        benchmark = self.benchmark
        return {
            "external_id": f"{benchmark}/{instance_id}" if benchmark else instance_id,
            "input": input_text,
            "output": output if isinstance(output, str) else "",  # no completion: as empty
            "model": model,
            "reference": reference,
            "benchmark": benchmark,
            "metadata": metadata,
        }


def _repeated_instance(state: dict[str, Any]) -> str | None:
    """Why a state repeats an instance (a later train trial, a perturbation), or None."""
    trial = state.get("train_trial_index")
    if isinstance(trial, int) and trial > 0:
        return _SKIPPED_TRIAL
    if _dig(state, "instance", "perturbation"):
        return _SKIPPED_PERTURBED
    return None


def _failed_request(state: dict[str, Any]) -> str | None:
    """The warning for a request that failed (there is no answer to rate), or None."""
    result = state.get("result")
    if isinstance(result, dict) and result.get("success") is False:
        detail = result.get("error")
        return "skipped: the request failed" + (f" ({detail})" if detail else "")
    return None


def _reference(references: Any) -> tuple[str, int | None]:
    """The gold answer and its index: the first reference tagged "correct", else the first.

    In HELM's generation scenarios (all of MedHELM's open-ended ones) the first reference is
    the correct answer; in multiple-choice ones references are the options and only the
    correct one is tagged, so references[0] would show clinicians a wrong option.
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


# --- the run's files ---------------------------------------------------------------------------


@dataclass(frozen=True)
class _HelmFiles:
    scenario_state: bytes | None
    run_spec: bytes | None
    run_name: str
    error: str = ""


def _failed(error: str) -> _HelmFiles:
    return _HelmFiles(None, None, "", error)


def _helm_files(source: HelmSource, name_hint: str, label: str) -> _HelmFiles:
    if not isinstance(source, str | Path):
        label = label or "the zip"
        if isinstance(source, bytes | bytearray | memoryview):
            data = bytes(source)
            if is_zip(data):
                return _zip_files(data, name_hint, label)
            return _HelmFiles(data, None, name_hint)
        return _stream_files(source, name_hint, label)
    path = Path(source)
    if path.is_dir():
        state, spec = path / "scenario_state.json", path / "run_spec.json"
        if not state.is_file():
            return _failed(f"no scenario_state.json in {path}")
        return _HelmFiles(state.read_bytes(), _read_if_file(spec), path.name)
    with path.open("rb") as head:
        zipped = is_zip(head.read(len(ZIP_MAGIC)))
    if zipped:
        return _zip_files(path, name_hint or path.stem, label or path.name)
    data = path.read_bytes()
    return _HelmFiles(data, _read_if_file(path.parent / "run_spec.json"), path.parent.name)


def _stream_files(stream: IO[bytes], name_hint: str, label: str) -> _HelmFiles:
    """A binary stream: a zip is read from it in place (it must be seekable), anything else
    is read whole."""
    head = stream.read(len(ZIP_MAGIC))
    if is_zip(head):
        stream.seek(0)
        return _zip_files(stream, name_hint, label)
    return _HelmFiles(head + read_bytes(stream), None, name_hint)


def _read_if_file(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def _zip_files(source: bytes | Path | IO[bytes], name_hint: str, label: str) -> _HelmFiles:
    """The run's files in a zip, read under the import limits; a problem of the zip (its
    limits, a damaged or encrypted member) is the run's error."""
    try:
        with UploadZip(source, label=label) as archive:
            return _run_in_zip(archive, name_hint)
    except AnnotationError as exc:
        return _failed(exc.message)


def _run_in_zip(archive: UploadZip, name_hint: str) -> _HelmFiles:
    members = archive.members
    states = [
        info
        for info in members
        if PurePosixPath(info.filename).name == "scenario_state.json"
        and not info.filename.startswith("__MACOSX/")
    ]
    if not states:
        return _failed(f"no scenario_state.json in {archive.label}")
    if len(states) > 1:
        found = ", ".join(m.filename for m in states[:5])
        return _failed(
            f"{archive.label} holds {len(states)} scenario_state.json files ({found}); "
            "upload one run directory at a time"
        )
    state = states[0]
    folder = PurePosixPath(state.filename).parent
    spec_name = str(folder / "run_spec.json") if str(folder) != "." else "run_spec.json"
    spec = next((info for info in members if info.filename == spec_name), None)
    return _HelmFiles(
        scenario_state=archive.read(state),
        run_spec=archive.read(spec) if spec is not None else None,
        run_name=folder.name if str(folder) != "." else name_hint,
    )


def _load_json(data: bytes, name: str) -> tuple[Any, str]:
    """(the parsed JSON, "") or (None, what is wrong with the file)."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        return None, f"{name} line {line}: " + utf8_reason(data, exc, 0)
    try:
        return loads(text), ""
    except ValueError as exc:
        return None, f"{name} is not valid JSON: {exc}"
