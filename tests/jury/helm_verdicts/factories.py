"""The sample HELM run and helpers of the HELM verdict import tests: item import, edited
copies of the run, and the verdicts as stored."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

from annotation import imports
from annotation.imports import pack_helm_run
from annotation.models import ImportJob
from jury.models import JudgeScore

HELM_RUN = Path(__file__).parent.parent / "data" / "helm_run" / "medi_qa"
MODEL = "demo_vendor/demo-model-7b"
JUDGES = ("gpt", "llama", "claude")
CRITERIA = ("accuracy", "completeness", "clarity")

Stored = dict[tuple[str, str, str], tuple[float | None, bool, str]]


def sample_states(run: Path = HELM_RUN) -> list[dict[str, Any]]:
    return json.loads((run / "scenario_state.json").read_text(encoding="utf-8"))["request_states"]


def import_items(study, actor, run: Path = HELM_RUN) -> ImportJob:
    job = imports.start_import(
        study=study,
        uploaded_name="medi_qa:model=demo_vendor_demo-model-7b.zip",
        content=pack_helm_run(run),
        file_format="helm",
        actor=actor,
        background=False,
    )
    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    return job


def run_copy(tmp_path: Path, change: Callable[[list[dict[str, Any]]], None]) -> Path:
    """A copy of the sample run whose request states `change` edits in place."""
    folder = tmp_path / "runs" / "medi_qa"
    folder.parent.mkdir(parents=True, exist_ok=True)
    shutil.copytree(HELM_RUN, folder)
    state = json.loads((folder / "scenario_state.json").read_text(encoding="utf-8"))
    change(state["request_states"])
    (folder / "scenario_state.json").write_text(json.dumps(state), encoding="utf-8")
    return folder


def verdicts(states: list[dict[str, Any]]) -> Stored:
    """Every judge score in the run, keyed as stored() keys them."""
    found: Stored = {}
    for state in states:
        external_id = f"medi_qa/{state['instance']['id']}"
        for judge in JUDGES:
            for criterion, verdict in state["annotations"]["medi_qa"].get(judge, {}).items():
                found[(external_id, f"helm:{judge}", criterion)] = (
                    verdict["score"],
                    True,
                    verdict["explanation"],
                )
    return found


def stored(study) -> Stored:
    rows = JudgeScore.objects.filter(item__study=study, call__isnull=True).values_list(
        "item__external_id", "judge__name", "criterion__key", "value", "is_valid", "explanation"
    )
    return {(e, j, c): (v, ok, x) for e, j, c, v, ok, x in rows}


def snapshot(study) -> list[tuple]:
    return list(
        JudgeScore.objects.filter(item__study=study)
        .order_by("pk")
        .values_list(
            "pk", "item_id", "judge_id", "criterion_id", "value", "is_valid", "explanation"
        )
    )


def edit(index: int, judge: str, criterion: str, **fields: Any):
    def change(states: list[dict[str, Any]]) -> None:
        states[index]["annotations"]["medi_qa"][judge][criterion].update(fields)

    return change
