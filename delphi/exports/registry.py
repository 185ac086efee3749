"""Every export of a Delphi study by name, and `render_export`, which turns a name into
(content, content type, filename).

The registry imports the table, checklist and report modules and none of them imports it:
it is where the parts meet. CSV cells go through the site's one writer; numbers are written
with up to 10 significant digits, booleans as true / false, an empty cell means no value.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from delphi.errors import DelphiError
from delphi.exports import answer_tables, tables
from delphi.exports.checklist import checklist_html, checklist_markdown
from delphi.exports.data import StudyData, load_study_data
from delphi.exports.protocol_text import protocol_export
from delphi.exports.report import render_report_html, render_report_pdf
from delphi.models import DelphiStudy
from medhelm_site.common.csv_export import csv_bytes

CSV = "text/csv; charset=utf-8"
HTML = "text/html; charset=utf-8"
Render = Callable[[StudyData], tuple[bytes, str]]


def csv_value(value: Any) -> Any:
    """A cell as the exports write it: floats to 10 significant digits (a whole number
    without ".0"), booleans as true / false; everything else as the CSV writer has it."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        rounded = float(format(value, ".10g"))
        return int(rounded) if rounded.is_integer() and abs(rounded) < 1e15 else rounded
    return value


def _csv_export(
    builder: Callable[[StudyData], list[dict[str, Any]]],
    columns: Sequence[str] | Callable[[StudyData], list[str]],
) -> Render:
    def render(data: StudyData) -> tuple[bytes, str]:
        names = columns(data) if callable(columns) else columns
        rows = ({key: csv_value(value) for key, value in row.items()} for row in builder(data))
        return csv_bytes(names, rows), CSV

    return render


def _protocol_json(data: StudyData) -> tuple[bytes, str]:
    document = protocol_export(study=data.study)
    text = json.dumps(document, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    return text.encode("utf-8"), "application/json"


def _text(render: Callable[[StudyData], str], content_type: str) -> Render:
    return lambda data: (render(data).encode("utf-8"), content_type)


EXPORTS: Mapping[str, Render] = {
    "protocol.json": _protocol_json,
    "flow.csv": _csv_export(answer_tables.flow_rows, answer_tables.FLOW_COLUMNS),
    "items.csv": _csv_export(tables.item_rows, tables.item_columns),
    "changes.csv": _csv_export(tables.change_rows, tables.CHANGE_COLUMNS),
    "comments.csv": _csv_export(answer_tables.comment_rows, answer_tables.COMMENT_COLUMNS),
    "raw.csv": _csv_export(answer_tables.raw_rows, answer_tables.RAW_COLUMNS),
    "statistics.csv": _csv_export(answer_tables.statistics_rows, answer_tables.STATISTICS_COLUMNS),
    "stability.csv": _csv_export(answer_tables.stability_rows, answer_tables.STABILITY_COLUMNS),
    "checklist.md": _text(checklist_markdown, "text/markdown; charset=utf-8"),
    "checklist.html": _text(checklist_html, HTML),
    "report.html": _text(render_report_html, HTML),
    "report.pdf": lambda data: (render_report_pdf(data), "application/pdf"),
}
EXPORT_NAMES: tuple[str, ...] = tuple(EXPORTS)


def render_export(*, study: DelphiStudy, name: str) -> tuple[bytes, str, str]:
    """(content, content type, filename) of one export; DelphiError for an unknown name or
    (protocol.json) a protocol that is not locked."""
    if name not in EXPORTS:
        raise DelphiError(f"unknown export {name!r}; choose one of {list(EXPORT_NAMES)}")
    content, content_type = EXPORTS[name](load_study_data(study))
    return content, content_type, f"delphi-study-{study.pk}-{name}"


__all__ = ["EXPORTS", "EXPORT_NAMES", "csv_value", "render_export"]
