"""Reading JSONL item files (annotation/imports/jsonl.py): no database needed."""

from __future__ import annotations

import io

from annotation.imports import ParsedRow, parse_jsonl
from tests.annotation.imports.factories import BAD_BYTE, DATA, GOOD, jsonl, where_reason


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
