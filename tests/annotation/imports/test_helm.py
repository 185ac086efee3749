"""Reading HELM runs into item rows (annotation/imports/helm.py): no database needed.

tests/annotation/data/helm_run/medi_qa/ is a copy of the HELM sample run
(shared/samples/helm_run/medi_qa:model=demo_vendor_demo-model-7b/), so the suite does not
depend on files outside the repository.
"""

from __future__ import annotations

import io
import json
import shutil
import zipfile
from dataclasses import replace

from annotation.imports import RowError, pack_helm_run, parse_helm_run
from tests.annotation.imports.factories import HELM_MODEL, HELM_RUN, where_reason


def test_helm_run_directory_reads_each_request_state():
    parsed = parse_helm_run(HELM_RUN)

    assert parsed.errors == []
    assert parsed.total == 4
    sample = json.loads((HELM_RUN / "scenario_state.json").read_text())["request_states"]
    assert len(parsed.rows) == 4
    for index, (row, state) in enumerate(zip(parsed.rows, sample, strict=True)):
        instance = state["instance"]
        assert row.where == f"request_states[{index}]"
        assert row.external_id == f"medi_qa/{instance['id']}"
        assert row.input_text == instance["input"]["text"]
        assert row.reference_text == instance["references"][0]["output"]["text"]
        assert row.output_text == state["result"]["completions"][0]["text"]
        assert row.model_name == HELM_MODEL == state["request"]["model"]
        assert row.benchmark == "medi_qa"  # run_spec "name" up to ':'
        assert row.task == ""
        assert row.metadata == {
            "helm_instance_id": instance["id"],
            "helm_run": "medi_qa:model=demo_vendor_demo-model-7b",
            "split": "test",
            "prompt_context": "Answer the following consumer health question.",
        }
    assert parsed.rows[0].output_text.startswith("Metformin commonly causes stomach upset")
    assert parsed.rows[3].output_text == ""
    assert parsed.counts["context_kept"] == 4
    assert where_reason(parsed.warnings) == [
        (
            "request_states",
            "context kept: the prompt's instructions and in-context examples (request.prompt "
            "before the input), shown to raters as a collapsed section: 4 request states "
            "(first request_states[0])",
        ),
        (
            "request_states[3]",
            "empty completion (imported: a model that answered nothing is still rated)",
        ),
    ]


def test_helm_zip_and_bare_scenario_state_read_the_same(tmp_path):
    expected = parse_helm_run(HELM_RUN).rows
    packed = pack_helm_run(HELM_RUN)
    assert parse_helm_run(packed).rows == expected
    # A zip of a whole benchmark_output tree, the run directory deep inside.
    nested = io.BytesIO()
    with zipfile.ZipFile(nested, "w") as archive:
        for name in ("scenario_state.json", "run_spec.json"):
            archive.write(HELM_RUN / name, f"benchmark_output/runs/v1/medi_qa:model=x/{name}")
    assert parse_helm_run(nested.getvalue()).rows == expected
    # scenario_state.json alone: the benchmark comes from the name it was uploaded under.
    alone = parse_helm_run(
        (HELM_RUN / "scenario_state.json").read_bytes(), name_hint="medi_qa:model=x"
    )
    assert alone.rows == [
        replace(r, metadata={**r.metadata, "helm_run": "medi_qa:model=x"}) for r in expected
    ]


def test_helm_without_a_run_name_warns_and_keeps_bare_ids():
    parsed = parse_helm_run((HELM_RUN / "scenario_state.json").read_bytes(), name_hint="")
    assert [r.external_id for r in parsed.rows] == ["id101", "id102", "id103", "id104"]
    assert {r.benchmark for r in parsed.rows} == {""}
    assert parsed.warnings[0] == RowError(
        "file",
        "no run name (run_spec.json or the run directory's name), so no benchmark: external "
        "ids are the bare instance ids; upload the run directory as a zip",
    )


def test_helm_benchmark_falls_back_to_the_directory_name(tmp_path):
    run = tmp_path / "med_dialog:subset=healthcaremagic,model=x"
    run.mkdir()
    shutil.copy(HELM_RUN / "scenario_state.json", run)
    parsed = parse_helm_run(run)
    assert {r.benchmark for r in parsed.rows} == {"med_dialog"}
    assert parsed.rows[0].external_id == "med_dialog/id101"


def test_helm_zip_with_two_runs_or_none_is_an_error():
    two = io.BytesIO()
    with zipfile.ZipFile(two, "w") as archive:
        archive.write(HELM_RUN / "scenario_state.json", "a/scenario_state.json")
        archive.write(HELM_RUN / "scenario_state.json", "b/scenario_state.json")
    assert where_reason(parse_helm_run(two.getvalue()).errors) == [
        (
            "file",
            "the zip holds 2 scenario_state.json files (a/scenario_state.json, "
            "b/scenario_state.json); upload one run directory at a time",
        )
    ]
    empty = io.BytesIO()
    with zipfile.ZipFile(empty, "w") as archive:
        archive.writestr("readme.txt", "nothing here")
    assert where_reason(parse_helm_run(empty.getvalue()).errors) == [
        ("file", "no scenario_state.json in the zip")
    ]


def _helm_state(**changes) -> dict:
    state = json.loads((HELM_RUN / "scenario_state.json").read_text())["request_states"][0]
    state = json.loads(json.dumps(state))
    for path, value in changes.items():
        target = state
        *steps, last = path.split("__")
        for step in steps:
            target = target[int(step)] if step.isdigit() else target[step]
        if value is KeyError:
            del target[last]
        else:
            target[last] = value
    return state


def test_helm_bad_request_states_are_reported_by_index_and_odd_ones_skipped():
    states = [
        _helm_state(),
        _helm_state(instance__id=KeyError),
        _helm_state(instance__input__text=None, request__model=KeyError),
        _helm_state(instance__id="id9", result={"success": False, "error": "rate limited"}),
        _helm_state(instance__id="id10", train_trial_index=1),
        _helm_state(instance__id="id11", result=KeyError),
        "not an object",
        _helm_state(
            instance__id="id13",
            instance__references=[
                {"output": {"text": "wrong option"}, "tags": []},
                {"output": {"text": "right option"}, "tags": ["correct"]},
            ],
        ),
        _helm_state(instance__id="id14", brand_new_helm_key={"x": 1}),
    ]
    parsed = parse_helm_run(json.dumps({"request_states": states}).encode(), name_hint="mq:m=x")

    assert where_reason(parsed.errors) == [
        ("request_states[1]", "missing instance.id"),
        ("request_states[2]", "missing instance.input.text"),
        ("request_states[2]", "missing request.model"),
        ("request_states[5]", "missing result"),
        ("request_states[6]", "expected an object, got a string"),
    ]
    assert [r.external_id for r in parsed.rows] == ["mq/id101", "mq/id13", "mq/id14"]
    # When the first reference is not the correct one, the one tagged "correct" is taken.
    assert parsed.rows[1].reference_text == "right option"
    assert where_reason(parsed.warnings) == [
        (
            "request_states",
            "context kept: the prompt's instructions and in-context examples (request.prompt "
            "before the input), shown to raters as a collapsed section: 3 request states "
            "(first request_states[0])",
        ),
        ("request_states[3]", "skipped: the request failed (rate limited)"),
        (
            "request_states",
            "skipped: train trials after the first (train_trial_index > 0): 1 request state "
            "(first request_states[4])",
        ),
        (
            "request_states",
            "reference taken from the first reference tagged 'correct', not references[0]: "
            "1 request state (first request_states[7])",
        ),
    ]


def test_helm_unreadable_files_are_errors():
    assert where_reason(parse_helm_run(b'{"request_states": {}}').errors) == [
        ("scenario_state.json", "'request_states' must be a list")
    ]
    assert where_reason(parse_helm_run(b'{"request_states": [\n\xff]}').errors) == [
        (
            "scenario_state.json",
            "scenario_state.json line 2: not valid UTF-8 (byte 0xff at byte offset 21 of the "
            "file); save the file as UTF-8",
        )
    ]
    assert where_reason(parse_helm_run(b'{"request_states": [}').errors) == [
        (
            "scenario_state.json",
            "scenario_state.json is not valid JSON: Expecting value (column 21)",
        )
    ]
