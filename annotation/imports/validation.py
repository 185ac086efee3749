"""Checks across the rows of a file and against the study: task names, duplicates within
the file, and conflicts with items the study has already (an import never edits an item)."""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping

from annotation.imports.rows import ParsedImport, ParsedRow, RowError, suggest
from annotation.services import ItemRow

Fingerprint = tuple[bytes, bytes, bytes]
TEXT_FIELDS = ("input", "output", "reference")


def _digest(text: str) -> bytes:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).digest()


def item_fingerprint(*, input_text: str, output_text: str, reference_text: str) -> Fingerprint:
    """Digests of an item's texts, to tell an unchanged re-import from a conflicting one
    without keeping every existing text in memory."""
    return (_digest(input_text), _digest(output_text), _digest(reference_text))


def conflict_reason(row: ParsedRow, existing: Fingerprint) -> str | None:
    """Why a row cannot be "unchanged" although its (external_id, model) is in the study."""
    mine = item_fingerprint(
        input_text=row.input_text, output_text=row.output_text, reference_text=row.reference_text
    )
    differ = [name for name, a, b in zip(TEXT_FIELDS, mine, existing, strict=True) if a != b]
    if not differ:
        return None
    return (
        f"external_id {row.external_id!r} with model {row.model_name!r} is already in this "
        f"study with a different {' and '.join(differ)}; an import never changes an existing item"
    )


def validate_rows(
    *,
    parsed: ParsedImport,
    task_names: Mapping[str, int] | None,
    existing: Mapping[tuple[str, str], Fingerprint] | None = None,
    progress: Callable[[int], None] | None = None,
    progress_every: int = 2000,
) -> tuple[list[ItemRow], list[RowError]]:
    """The rows ready for create_items, and ALL errors (the parser's too) in file order.

    `task_names` maps node names of the study's taxonomy version to node ids (None: the
    study has no version, so any task is an error). `existing` maps the study's
    (external_id, model) to item_fingerprint: the same texts give a row (counted
    "unchanged"), other texts an error. `progress(n)` is called every `progress_every` rows
    and at the end, n counting the parser's rejected records as done.
    """
    checker = _RowChecker(task_names=task_names, existing=existing or {})
    errors = list(parsed.errors)
    rows: list[ItemRow] = []
    done = parsed.total - len(parsed.rows)
    for n, row in enumerate(parsed.rows, start=1):
        if progress is not None and n % progress_every == 0:
            progress(done + n)
        item_row, reason = checker.check(row)
        if item_row is not None:
            rows.append(item_row)
        else:
            errors.append(RowError(row.where, reason, row.order))
    if progress is not None:
        progress(parsed.total)
    errors.sort(key=lambda e: e.order)
    return rows, errors


class _RowChecker:
    """Checks rows one after the other; remembers the keys seen and the unknown tasks."""

    def __init__(
        self,
        *,
        task_names: Mapping[str, int] | None,
        existing: Mapping[tuple[str, str], Fingerprint],
    ) -> None:
        self.task_names = task_names
        self.existing = existing
        self.first_seen: dict[tuple[str, str], str] = {}
        self.suggestions: dict[str, str] = {}  # unknown task -> " (did you mean ...?)"

    def check(self, row: ParsedRow) -> tuple[ItemRow | None, str]:
        """(the row to save, "") or (None, why not)."""
        if row.key in self.first_seen:
            return None, (
                f"external_id {row.external_id!r} with model {row.model_name!r} appears "
                f"twice in this file (first at {self.first_seen[row.key]})"
            )
        self.first_seen[row.key] = row.where
        node_id, reason = self._task(row.task)
        if not reason and row.key in self.existing:
            reason = conflict_reason(row, self.existing[row.key]) or ""
        if reason:
            return None, reason
        return _item_row(row, node_id), ""

    def _task(self, task: str) -> tuple[int | None, str]:
        """(the node id of the task or None, "") or (None, why the task is not known)."""
        if not task:
            return None, ""
        if self.task_names is None:
            return None, f"task {task!r} given, but the study has no taxonomy version"
        node_id = self.task_names.get(task)
        if node_id is not None:
            return node_id, ""
        if task not in self.suggestions:
            self.suggestions[task] = suggest(task, self.task_names)
        return None, (
            f"unknown task {task!r}: not a node of the study's taxonomy "
            f"version{self.suggestions[task]}"
        )


def _item_row(row: ParsedRow, node_id: int | None) -> ItemRow:
    return ItemRow(
        external_id=row.external_id,
        input_text=row.input_text,
        output_text=row.output_text,
        model_name=row.model_name,
        reference_text=row.reference_text,
        benchmark=row.benchmark,
        taxonomy_node_id=node_id,
        metadata=row.metadata,
    )
