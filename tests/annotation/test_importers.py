"""Parsing and checking of item files (annotation/importers.py): no database needed.

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
from pathlib import Path

import pytest

from annotation.importers import (
    ParsedImport,
    ParsedRow,
    RowError,
    item_fingerprint,
    pack_helm_run,
    parse_csv,
    parse_helm_run,
    parse_jsonl,
    validate_rows,
)

DATA = Path(__file__).parent / "data"
HELM_RUN = DATA / "helm_run" / "medi_qa"
HELM_MODEL = "demo_vendor/demo-model-7b"
TASKS = {"Treatment planning QA": 11, "Planning Treatments": 7}


def where_reason(errors: list[RowError]) -> list[tuple[str, str]]:
    return [(e.where, e.reason) for e in errors]


def jsonl(*objects: object) -> bytes:
    return "\n".join(o if isinstance(o, str) else json.dumps(o) for o in objects).encode()


BAD_BYTE = b"\xff"
GOOD = {"external_id": "c1", "model": "m", "input": "q", "output": "a"}


# --- JSONL -----------------------------------------------------------------------------------


def test_jsonl_good_file_reads_every_field():
    parsed = parse_jsonl((DATA / "items.jsonl").read_bytes())

    assert parsed.errors == []
    assert parsed.total == 3  # the blank line is not a record
    first, second, third = parsed.rows
    assert first == ParsedRow(
        where="line 1",
        order=1,
        external_id="case-001",
        model_name="model-a",
        input_text="A 54-year-old man with chest pain.\nWhat next?",
        output_text="Order an ECG and troponin.",
        reference_text="ECG within 10 minutes, serial troponins.",
        benchmark="medcalc",
        task="Treatment planning QA",
        metadata={"source": "ward 3", "difficulty": 2},
    )
    # "id" is an alias, an integer id becomes text, ids lose surrounding spaces.
    assert (second.where, second.external_id, second.model_name) == ("line 3", "2", "model-b")
    assert (second.reference_text, second.task, second.metadata) == ("", "", {})
    assert third.external_id == "case-003"
    assert third.input_text == "  Keep my spaces  "  # texts are kept as given
    assert third.output_text == "Ünïcödé answer ✓"
    # An empty output is imported, with a warning naming its line.
    assert where_reason(parsed.warnings) == [
        ("line 3", "empty output (imported: a model that answered nothing is still rated)")
    ]


def test_jsonl_reports_every_bad_line_with_its_reason():
    data = b"\n".join(
        [
            jsonl(GOOD),
            jsonl({"external_id": "c2", "model": "m", "input": "q"}),
            b'{"external_id": "c3", "model": "m", "input": "q", "output": "a"',
            jsonl({**GOOD, "external_id": "c4", "metadata": ["not", "an", "object"]}),
            b'{"external_id": "c5", "model": "m", "input": "q\xff\xfe", "output": "a"}',
            jsonl({**GOOD, "external_id": "c6", "refernce": "typo"}),
            jsonl([1, 2]),
            jsonl({**GOOD, "external_id": "c8", "output": "a\u0000b"}),
            jsonl({**GOOD, "external_id": "c9", "input": "   "}),
            jsonl({**GOOD, "external_id": "c10", "output": 3}),
            b'{"external_id": "c11", "model": "m", "input": "q", "output": NaN}',
            jsonl({**GOOD, "id": "c12"}),
            jsonl({"external_id": "x" * 201, "model": "m", "input": "q", "output": "a"}),
            jsonl({"input": "q"}),
        ]
    )

    parsed = parse_jsonl(io.BytesIO(data))

    assert [r.external_id for r in parsed.rows] == ["c1"]
    assert parsed.total == 14
    assert where_reason(parsed.errors) == [
        ("line 2", "missing required field 'output'"),
        ("line 3", "not valid JSON: Expecting ',' delimiter (column 64)"),
        ("line 4", "metadata must be a JSON object, got a list"),
        (
            "line 5",
            f"not valid UTF-8 (byte 0xff at byte offset {data.index(BAD_BYTE)} of the file); "
            "save the file as UTF-8",
        ),
        (
            "line 6",
            "unknown field 'refernce' (did you mean 'reference'?); known: external_id, input, "
            "output, model, reference, task, benchmark, metadata; put extra data in 'metadata'",
        ),
        ("line 7", "expected a JSON object, got a list"),
        ("line 8", "field 'output' contains a NUL character"),
        ("line 9", "field 'input' is empty"),
        ("line 10", "field 'output' must be a string, got a number"),
        ("line 11", "not valid JSON: NaN is not allowed"),
        ("line 12", "give either 'id' or 'external_id', not both"),
        ("line 13", "field 'external_id' is longer than 200 characters (201)"),
        ("line 14", "missing required field 'external_id'"),
        ("line 14", "missing required field 'output'"),
        ("line 14", "missing required field 'model'"),
    ]


def test_jsonl_byte_offset_points_at_the_bad_byte():
    data = jsonl(GOOD) + b"\n" + b'{"external_id": "\xc3("}'
    (error,) = parse_jsonl(data).errors
    offset = int(error.reason.split("byte offset ")[1].split()[0])
    assert data[offset : offset + 2] == b"\xc3("
    assert error.where == "line 2"


def test_jsonl_accepts_a_bom_and_crlf_line_ends():
    data = b"\xef\xbb\xbf" + jsonl(GOOD).replace(b"\n", b"\r\n") + b"\r\n"
    parsed = parse_jsonl(data)
    assert parsed.errors == []
    assert parsed.rows[0].output_text == "a"


def test_jsonl_metadata_with_nul_is_rejected():
    parsed = parse_jsonl(jsonl({**GOOD, "metadata": {"note": ["ok", "bad\u0000"]}}))
    assert where_reason(parsed.errors) == [("line 1", "metadata contains a NUL character")]


def test_a_long_field_is_fine():
    long_text = "x" * 3_000_000
    parsed = parse_jsonl(jsonl({**GOOD, "input": long_text}))
    assert parsed.errors == [] and parsed.rows[0].input_text == long_text


# --- CSV -------------------------------------------------------------------------------------


def test_csv_good_file_reads_every_field():
    parsed = parse_csv((DATA / "items.csv").read_bytes())

    assert parsed.errors == []
    assert parsed.total == 2
    first, second = parsed.rows
    assert first == ParsedRow(
        where="row 1 (line 2)",
        order=2,
        external_id="case-101",
        model_name="model-a",
        input_text="Line one\r\nline two, with a comma",
        output_text="Answer 1",
        reference_text="Ref 1",
        benchmark="medi_qa",
        task="Treatment planning QA",
        metadata={"arm": "B", "site": "Boston", "author": "dr_x"},
    )
    # The quoted newline made row 1 two lines long and a blank line follows: row 2 is line 5.
    assert second == ParsedRow(
        where="row 2 (line 5)",
        order=5,
        external_id="case-102",
        model_name="model-b",
        input_text="Short input",
        output_text='Answer with "quotes"',
    )


def test_csv_header_problems_are_all_reported():
    parsed = parse_csv(b"id,inputs,model,model,meta.\n1,q,m,m,x\n")
    assert where_reason(parsed.errors) == [
        ("header (line 1)", "column 'meta.' needs a key after the dot"),
        ("header (line 1)", "column 'model' appears twice"),
        (
            "header (line 1)",
            "unknown column 'inputs' (did you mean 'input'?); known: external_id, input, "
            "output, model, reference, task, benchmark, metadata; put extra data in 'metadata'",
        ),
        ("header (line 1)", "missing required columns ['input', 'output']"),
    ]
    assert parsed.rows == []


def test_csv_bad_rows_are_reported_with_row_and_line():
    data = (
        b"external_id,model,input,output,metadata,meta.k\n"
        b'c1,m,"two\nlines",a,,\n'  # lines 2-3, fine
        b"c2,m,q,a\n"  # line 4: too few fields
        b"c3,m,q,a,[1],\n"  # line 5: metadata not an object
        b'c4,m,q,a,"{""k"": 1}",2\n'  # line 6: k given twice
        b"c5,m,q\xe9,a,,\n"  # line 7: Latin-1, not UTF-8
        b"c6,,q,a,,\n"  # line 8: empty model
        b"c7,m,q,a,{bad,\n"  # line 9: metadata not JSON
    )
    parsed = parse_csv(data)

    assert [r.external_id for r in parsed.rows] == ["c1"]
    assert parsed.total == 7
    assert where_reason(parsed.errors) == [
        ("row 2 (line 4)", "has 4 fields but the header has 6"),
        ("row 3 (line 5)", "metadata must be a JSON object, got a list"),
        (
            "row 4 (line 6)",
            "metadata key 'k' is given both in the metadata column and in column 'meta.k'",
        ),
        (
            "line 7",
            "not valid UTF-8 (byte 0xe9 at byte offset 121 of the file); save the file as UTF-8",
        ),
        ("row 6 (line 8)", "field 'model' is empty"),
        (
            "row 7 (line 9)",
            "metadata is not valid JSON: Expecting property name enclosed in double quotes "
            "(column 2)",
        ),
    ]
    assert data.index(b"\xe9") == 121


def test_csv_unterminated_quote_is_reported_where_the_record_starts():
    parsed = parse_csv(
        b'external_id,model,input,output\nc1,m,q,a\nc2,m,"never closed,a\nc3,m,q,a\n'
    )
    assert where_reason(parsed.errors) == [
        (
            "row 2 (line 3)",
            "not valid CSV: unexpected end of data; the rest of the file was not read",
        )
    ]


def test_csv_empty_file():
    assert where_reason(parse_csv(b"\xef\xbb\xbf \n").errors) == [
        ("file", "the file is empty (a CSV needs a header row)")
    ]


# --- HELM ------------------------------------------------------------------------------------


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
        }
    assert parsed.rows[0].output_text.startswith("Metformin commonly causes stomach upset")
    assert parsed.rows[3].output_text == ""
    assert where_reason(parsed.warnings) == [
        (
            "request_states[3]",
            "empty completion (imported: a model that answered nothing is still rated)",
        )
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


# --- checks across rows ----------------------------------------------------------------------


def _parsed(*rows: dict) -> ParsedImport:
    return parse_jsonl(jsonl(*rows))


def test_validate_resolves_tasks_and_reports_unknown_ones_and_duplicates():
    parsed = _parsed(
        {**GOOD, "external_id": "a", "task": "Treatment planning QA"},
        {**GOOD, "external_id": "b", "task": "Planing Treatments"},
        {**GOOD, "external_id": "a", "task": "Planning Treatments"},
        {**GOOD, "external_id": "a", "model": "other"},
        "{broken",
        {**GOOD, "external_id": "c"},
    )
    rows, errors = validate_rows(parsed=parsed, task_names=TASKS)

    assert [(r.external_id, r.model_name, r.taxonomy_node_id) for r in rows] == [
        ("a", "m", 11),
        ("a", "other", None),
        ("c", "m", None),
    ]
    # Parser errors and row checks together, in file order.
    assert where_reason(errors) == [
        (
            "line 2",
            "unknown task 'Planing Treatments': not a node of the study's taxonomy version "
            "(did you mean 'Planning Treatments'?)",
        ),
        ("line 3", "external_id 'a' with model 'm' appears twice in this file (first at line 1)"),
        ("line 5", "not valid JSON: Expecting property name enclosed in double quotes (column 2)"),
    ]


def test_validate_task_without_taxonomy_version_is_an_error():
    _, errors = validate_rows(parsed=_parsed({**GOOD, "task": "Anything"}), task_names=None)
    assert where_reason(errors) == [
        ("line 1", "task 'Anything' given, but the study has no taxonomy version")
    ]


def test_validate_existing_item_with_same_texts_is_kept_with_other_texts_is_an_error():
    parsed = _parsed(
        {**GOOD, "external_id": "same"}, {**GOOD, "external_id": "changed", "output": "new"}
    )
    old = item_fingerprint(input_text="q", output_text="a", reference_text="")
    rows, errors = validate_rows(
        parsed=parsed, task_names=None, existing={("same", "m"): old, ("changed", "m"): old}
    )
    assert [r.external_id for r in rows] == ["same"]
    assert where_reason(errors) == [
        (
            "line 2",
            "external_id 'changed' with model 'm' is already in this study with a different "
            "output; an import never changes an existing item",
        )
    ]


def test_validate_reports_progress_in_batches():
    parsed = _parsed(*({**GOOD, "external_id": f"c{i}"} for i in range(5)), "[]")
    seen: list[int] = []
    validate_rows(parsed=parsed, task_names=None, progress=seen.append, progress_every=2)
    # The rejected line counts as done from the start; the last call reports the total.
    assert seen == [3, 5, 6]
    assert parsed.total == 6


@pytest.mark.parametrize(
    ("data", "where"),
    [
        (b"[]", "line 1"),
        (b'{"external_id": "a"}', "line 1"),
    ],
)
def test_nothing_valid_gives_no_rows(data, where):
    rows, errors = validate_rows(parsed=parse_jsonl(data), task_names=None)
    assert rows == [] and errors and errors[0].where == where
