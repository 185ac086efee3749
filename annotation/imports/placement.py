"""Filing HELM items under the study's taxonomy by their benchmark, without a task column:
HELM's MedHELM schema places each benchmark under a MedHELM category
(delphi.services.medhelm_benchmark_nodes, shipped with the taxonomy fixture).

Only when the study's taxonomy holds MedHELM's categories (by name): then a row without a
task whose benchmark the schema places gets that node, and the benchmarks it does not
place are listed in a warning, with their item counts, for the coordinator to place (a
task column, or a later edit). A row with a task keeps it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import replace

from annotation.imports.rows import ParsedImport, RowError
from delphi.services import medhelm_benchmark_nodes

PLACED = "filed_by_benchmark"
UNPLACED = "not_filed"


def place_by_benchmark(parsed: ParsedImport, task_names: Mapping[str, int] | None) -> None:
    """Give rows without a task the node HELM's schema files their benchmark under; count
    them (parsed.counts) and warn about the benchmarks left unplaced."""
    nodes = medhelm_benchmark_nodes()
    if not task_names or not any(name in task_names for name in set(nodes.values())):
        return
    unplaced: Counter[str] = Counter()
    placed = 0
    for index, row in enumerate(parsed.rows):
        if row.task:
            continue
        node = nodes.get(row.benchmark)
        if node is not None and node in task_names:
            parsed.rows[index] = replace(row, task=node)
            placed += 1
        else:
            unplaced[row.benchmark or "(no benchmark)"] += 1
    if placed:
        parsed.counts[PLACED] = placed
    if unplaced:
        parsed.counts[UNPLACED] = sum(unplaced.values())
        parsed.warnings.append(RowError("taxonomy", _unplaced_reason(unplaced, nodes), -1))


def _unplaced_reason(unplaced: Counter[str], nodes: Mapping[str, str]) -> str:
    listed = []
    for name, count in sorted(unplaced.items()):
        node = nodes.get(name)
        why = (
            f"filed under {node!r}, which the study's taxonomy lacks"
            if node
            else "not in HELM's MedHELM schema"
        )
        listed.append(f"{name} ({count} items: {why})")
    return (
        "not filed under the taxonomy (fixtures/medhelm_benchmarks.json): "
        + "; ".join(listed)
        + ". Give them a task column"
    )
