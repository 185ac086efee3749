"""Reading CSV item files (annotation/imports/csvfile.py): no database needed."""

from __future__ import annotations

from annotation.imports import ParsedRow, parse_csv
from tests.annotation.imports.factories import DATA, where_reason


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
