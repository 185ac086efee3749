"""A snapshot's long score table as tidy CSV and Parquet, with its data dictionary.

The snapshot stores its results, not the score table, so the table is read again with the
snapshot's parameters; its hash must equal the snapshot's input hash, or the download is
refused (the scores changed since: recompute the report to download what it is computed on).
"""

from __future__ import annotations

import io
import json
import math
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from agreement import analysis, selectors
from agreement.errors import AgreementError
from agreement.models import ReportSnapshot
from agreement.services.computing import canonical_hash
from agreement.services.parameters import normalise_parameters
from medhelm_site.common.csv_export import csv_text

#: Parquet column types: the dictionary's types as Arrow types.
ARROW_TYPES = {"integer": pa.int64(), "number": pa.float64(), "string": pa.string()}


def tidy_table(snapshot: ReportSnapshot) -> pd.DataFrame:
    """The score table the snapshot was computed on, tidy (analysis.TIDY_COLUMNS)."""
    parameters = normalise_parameters(snapshot.parameters)
    data = selectors.score_data(
        study=snapshot.study,
        values=parameters["values"],
        exclude_flagged=parameters["exclude_flagged"],
    )
    if canonical_hash(data.table) != snapshot.input_hash:
        raise AgreementError(
            f"The scores of the study changed since report #{snapshot.pk} was computed (its "
            "input hash no longer matches): recompute the report to download the score table "
            "it is computed on.",
            field="input_hash",
        )
    return analysis.tidy_scores(data.table, data.items, report=snapshot.pk)


def _records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """Rows with NaN as None (an empty cell), numbers as numbers."""
    return [
        {k: None if isinstance(v, float) and math.isnan(v) else v for k, v in row.items()}
        for row in table.to_dict("records")
    ]


def scores_csv(snapshot: ReportSnapshot) -> str:
    """The tidy score table as CSV (the shared writer: names cannot act as formulas). Lines
    end in CRLF, the writer's default: with a bare LF the csv module would leave a name
    holding a carriage return unquoted, and a reader would split the row there."""
    return csv_text(list(analysis.TIDY_COLUMNS), _records(tidy_table(snapshot)))


def scores_parquet(snapshot: ReportSnapshot) -> bytes:
    """The tidy score table as Parquet: typed columns, each described in its field metadata,
    the report id and input hash in the file metadata."""
    table = tidy_table(snapshot)
    schema = pa.schema(
        [
            pa.field(name, ARROW_TYPES[kind], metadata={"description": text})
            for name, (kind, text) in analysis.TIDY_COLUMNS.items()
        ],
        metadata={
            "medhelm_studio": json.dumps(
                {
                    "report": snapshot.pk,
                    "study": snapshot.study_id,
                    "input_hash": snapshot.input_hash,
                }
            )
        },
    )
    arrow = pa.Table.from_pandas(table, schema=schema, preserve_index=False)
    buffer = io.BytesIO()
    pq.write_table(arrow, buffer)
    return buffer.getvalue()


def scores_dictionary() -> str:
    """The data dictionary of the tidy score table, as Markdown."""
    lines = [
        "# Score table: data dictionary",
        "",
        "| Column | Type | Description |",
        "|---|---|---|",
    ]
    lines += [
        f"| `{r['column']}` | {r['type']} | {r['description']} |"
        for r in analysis.dictionary_rows()
    ]
    return "\n".join(lines) + "\n"
