"""The files of a HELM run (scenario_state.json and run_spec.json) from a run directory, a
zip of one (read through archive.UploadZip, under the import limits), scenario_state.json
itself, bytes or a binary stream."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import IO, Any

from annotation.errors import AnnotationError
from annotation.imports.archive import ZIP_MAGIC, UploadZip, is_zip
from annotation.imports.rows import Source, loads, read_bytes, utf8_reason

HelmSource = str | Path | Source


@dataclass(frozen=True)
class HelmFiles:
    scenario_state: bytes | None
    run_spec: bytes | None
    run_name: str
    error: str = ""


def _failed(error: str) -> HelmFiles:
    return HelmFiles(None, None, "", error)


def helm_files(source: HelmSource, name_hint: str, label: str) -> HelmFiles:
    if not isinstance(source, str | Path):
        label = label or "the zip"
        if isinstance(source, bytes | bytearray | memoryview):
            data = bytes(source)
            if is_zip(data):
                return _zip_files(data, name_hint, label)
            return HelmFiles(data, None, name_hint)
        return _stream_files(source, name_hint, label)
    path = Path(source)
    if path.is_dir():
        state, spec = path / "scenario_state.json", path / "run_spec.json"
        if not state.is_file():
            return _failed(f"no scenario_state.json in {path}")
        return HelmFiles(state.read_bytes(), _read_if_file(spec), path.name)
    with path.open("rb") as head:
        zipped = is_zip(head.read(len(ZIP_MAGIC)))
    if zipped:
        return _zip_files(path, name_hint or path.stem, label or path.name)
    data = path.read_bytes()
    return HelmFiles(data, _read_if_file(path.parent / "run_spec.json"), path.parent.name)


def _stream_files(stream: IO[bytes], name_hint: str, label: str) -> HelmFiles:
    """A binary stream: a zip is read from it in place (it must be seekable), anything else
    is read whole."""
    head = stream.read(len(ZIP_MAGIC))
    if is_zip(head):
        stream.seek(0)
        return _zip_files(stream, name_hint, label)
    return HelmFiles(head + read_bytes(stream), None, name_hint)


def _read_if_file(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def _zip_files(source: bytes | Path | IO[bytes], name_hint: str, label: str) -> HelmFiles:
    """The run's files in a zip, read under the import limits; a problem of the zip (its
    limits, a damaged or encrypted member) is the run's error."""
    try:
        with UploadZip(source, label=label) as archive:
            return _run_in_zip(archive, name_hint)
    except AnnotationError as exc:
        return _failed(exc.message)


def _run_in_zip(archive: UploadZip, name_hint: str) -> HelmFiles:
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
    return HelmFiles(
        scenario_state=archive.read(state),
        run_spec=archive.read(spec) if spec is not None else None,
        run_name=folder.name if str(folder) != "." else name_hint,
    )


def load_json(data: bytes, name: str) -> tuple[Any, str]:
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
