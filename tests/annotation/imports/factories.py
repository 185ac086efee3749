"""Data and helpers of the item import tests: sample files, JSONL lines, an upload."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

from annotation import imports
from annotation.imports import RowError
from annotation.models import Item

DATA = Path(__file__).parent.parent / "data"
HELM_RUN = DATA / "helm_run" / "medi_qa"
HELM_MODEL = "demo_vendor/demo-model-7b"
BAD_BYTE = b"\xff"
GOOD = {"external_id": "c1", "model": "m", "input": "q", "output": "a"}


def where_reason(errors: list[RowError]) -> list[tuple[str, str]]:
    return [(e.where, e.reason) for e in errors]


def jsonl(*objects) -> bytes:
    return "\n".join(o if isinstance(o, str) else json.dumps(o) for o in objects).encode()


def start(study, actor, data: bytes, file_format="jsonl", name="items.jsonl", **kwargs):
    return imports.start_import(
        study=study,
        uploaded_name=name,
        content=data,
        file_format=file_format,
        actor=actor,
        **kwargs,
    )


def item_state(item: Item) -> tuple:
    return (
        item.external_id,
        item.model_name,
        item.input_text,
        item.output_text,
        item.reference_text,
        item.benchmark,
        item.taxonomy_node_id,
        item.metadata,
    )


BAD_JSONL = b"\n".join(
    [
        jsonl({"external_id": "new-1", "model": "m", "input": "q", "output": "a"}),
        jsonl({"external_id": "new-2", "model": "m", "input": "q"}),
        b'{"external_id": "new-3", "model": "m"',
        jsonl({"external_id": "new-4", "model": "m", "input": "q", "output": "a", "task": "Nope"}),
        jsonl({"external_id": "new-1", "model": "m", "input": "q", "output": "b"}),
        jsonl({"external_id": "new-6", "model": "m", "input": "q", "output": "a", "metadata": 5}),
        b'{"external_id": "new-7", "model": "m", "input": "caf\xe9", "output": "a"}',
        jsonl({"external_id": "new-8", "model": "m", "input": "q", "output": "fine"}),
    ]
)


BAD_JSONL_ERRORS = [
    {"where": "line 2", "reason": "missing required field 'output'"},
    {"where": "line 3", "reason": "not valid JSON: Expecting ',' delimiter (column 38)"},
    {
        "where": "line 4",
        "reason": "unknown task 'Nope': not a node of the study's taxonomy version",
    },
    {
        "where": "line 5",
        "reason": "external_id 'new-1' with model 'm' appears twice in this file (first at line 1)",
    },
    {"where": "line 6", "reason": "metadata must be a JSON object, got a number"},
    {
        "where": "line 7",
        "reason": "not valid UTF-8 (byte 0xe9 at byte offset 446 of the file); "
        "save the file as UTF-8",
    },
]


# --- zips, honest and not ----------------------------------------------------------------------

HELM_ZIP_NAME = "medi_qa:model=demo_vendor_demo-model-7b.zip"
STATE_MEMBER = "medi_qa/scenario_state.json"
ZIP_DATE = (2025, 1, 1, 0, 0, 0)


def helm_zip(
    state: bytes | None = None,
    *,
    spec: bytes | None = None,
    extra: dict[str, bytes] | None = None,
    compression: int = zipfile.ZIP_DEFLATED,
) -> bytes:
    """A zip of a run directory "medi_qa/": the sample run's files unless given."""
    if state is None:
        state = (HELM_RUN / "scenario_state.json").read_bytes()
    if spec is None:
        spec = (HELM_RUN / "run_spec.json").read_bytes()
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=compression) as archive:
        members = {STATE_MEMBER: state, "medi_qa/run_spec.json": spec, **(extra or {})}
        for name, data in members.items():
            # Dated, not stamped with the second it is made: the same bytes every time, so
            # the parallel run's processes collect the same ids for tests parametrized with
            # them (a zip made a second later in the other process stopped a run at start).
            member = zipfile.ZipInfo(name, date_time=ZIP_DATE)
            member.compress_type = compression
            archive.writestr(member, data)
    return buffer.getvalue()


def blank_state(unpacked_bytes: int) -> bytes:
    """A valid scenario_state.json of `unpacked_bytes` bytes, nearly all of them spaces: it
    deflates about a thousandfold (a zip bomb that is also valid JSON)."""
    head, tail = b'{"request_states": [', b"]}"
    return head + b" " * (unpacked_bytes - len(head) - len(tail)) + tail


# Offsets of fields in a zip member's local header and central directory entry (APPNOTE 4.3.7,
# 4.3.12): the general purpose flags, the compression method, the CRC-32, the unpacked size.
_LOCAL = {"flags": 6, "method": 8, "crc": 14, "size": 22}
_CENTRAL = {"flags": 8, "method": 10, "crc": 16, "size": 24}
_WIDTH = {"flags": 2, "method": 2, "crc": 4, "size": 4}


def patch_member(data: bytes, name: str, **fields: int) -> bytes:
    """`data` with fields of member `name` (flags, method, crc, size) overwritten in both its
    local header and its central directory entry, as a damaged or hostile zip has them."""
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        info = archive.getinfo(name)
    out = bytearray(data)
    central = out.find(b"PK\x01\x02")
    encoded = name.encode()
    while central != -1:
        name_length = int.from_bytes(out[central + 28 : central + 30], "little")
        if bytes(out[central + 46 : central + 46 + name_length]) == encoded:
            break
        central = out.find(b"PK\x01\x02", central + 4)
    assert central != -1, name
    for field_name, value in fields.items():
        width = _WIDTH[field_name]
        for start in (info.header_offset + _LOCAL[field_name], central + _CENTRAL[field_name]):
            out[start : start + width] = value.to_bytes(width, "little")
    return bytes(out)


# --- suites made of the sample run -------------------------------------------------------------


def sample_run(model: str, prompts: dict[str, str] | None = None) -> dict[str, bytes]:
    """The sample run's files (scenario_state.json, run_spec.json) as `model` ("org/name")
    ran it: every request and the run's name name that model. `prompts` replaces the prompt
    of the given instance ids."""
    state = json.loads((HELM_RUN / "scenario_state.json").read_bytes())
    spec = json.loads((HELM_RUN / "run_spec.json").read_bytes())
    for adapter in (state["adapter_spec"], spec["adapter_spec"]):
        adapter["model"] = adapter["model_deployment"] = model
    for request_state in state["request_states"]:
        request_state["request"]["model"] = request_state["request"]["model_deployment"] = model
        instance = request_state["instance"]["id"]
        if prompts and instance in prompts:
            request_state["request"]["prompt"] = prompts[instance]
    spec["name"] = f"medi_qa:model={model.replace('/', '_')}"
    return {
        "scenario_state.json": json.dumps(state).encode(),
        "run_spec.json": json.dumps(spec).encode(),
    }


def suite_zip(runs: dict[str, dict[str, bytes]], *, suite: str = "tests") -> bytes:
    """A zip of a suite folder `suite`/: a run directory per entry of `runs` (its name: its
    files)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for folder, files in runs.items():
            for name, data in files.items():
                archive.writestr(f"{suite}/{folder}/{name}", data)
    return buffer.getvalue()


def sample_prompt(instance: str) -> str:
    """The sample run's prompt of `instance` (its id, e.g. "id102")."""
    state = json.loads((HELM_RUN / "scenario_state.json").read_bytes())
    return next(
        s["request"]["prompt"] for s in state["request_states"] if s["instance"]["id"] == instance
    )
