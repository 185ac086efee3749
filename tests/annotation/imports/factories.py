"""Data and helpers of the item import tests: sample files, JSONL lines, an upload."""

from __future__ import annotations

import json
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
