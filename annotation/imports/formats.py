"""The import formats by name, and reading a source in one of them."""

from __future__ import annotations

from pathlib import Path

from annotation.imports.csvfile import parse_csv
from annotation.imports.helm import HelmSource, parse_helm_run
from annotation.imports.jsonl import parse_jsonl
from annotation.imports.rows import ParsedImport, read_bytes

FORMATS = ("jsonl", "csv", "helm")


def parse(
    *, file_format: str, source: HelmSource, name_hint: str = "", label: str = ""
) -> ParsedImport:
    """Dispatch on the format name ("jsonl", "csv" or "helm"); `name_hint` and `label` are
    for HELM runs (see read_helm_run). An unknown name is a bug of the caller (start_import
    checks it), hence a ValueError."""
    if file_format == "helm":
        return parse_helm_run(source, name_hint=name_hint, label=label)
    data = Path(source).read_bytes() if isinstance(source, str | Path) else read_bytes(source)
    if file_format == "jsonl":
        return parse_jsonl(data)
    if file_format == "csv":
        return parse_csv(data)
    raise ValueError(f"unknown import format {file_format!r}; use jsonl, csv or helm")
