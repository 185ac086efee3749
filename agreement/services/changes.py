"""What moved between a snapshot and its recomputation: input, software and every cell."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agreement.models import ReportSnapshot

#: Two numbers closer than this are the same (bootstrap sums agree to ~1e-15).
TOLERANCE = 1e-9
COMPARED_FIELDS = ("estimate", "ci_low", "ci_high", "n_items", "n_raters", "status")


def _cell_index(results: Mapping[str, Any]) -> dict[tuple[str, ...], Mapping[str, Any]]:
    out: dict[tuple[str, ...], Mapping[str, Any]] = {}
    for c in results.get("cells", []):
        out[(c["section"], c["row_group"], c["row"], c["column"])] = c
    for d in results.get("differences", []):
        out[("difference", d["row_group"], d["row"], d["column"])] = d
    return out


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float):
        return abs(a - b) <= TOLERANCE * max(1.0, abs(a), abs(b))
    return a == b


def _is_number(x: Any) -> bool:
    return isinstance(x, int | float)


def _moved_cell(key: tuple[str, ...], old: Mapping[str, Any], new: Mapping[str, Any]) -> dict:
    """One cell that moved: where it is, which fields changed, its estimates before and now."""
    changed = [f for f in COMPARED_FIELDS if not _same(old.get(f), new.get(f))]
    a, b = old.get("estimate"), new.get("estimate")
    return {
        "section": key[0],
        "row_group": key[1],
        "row": key[2],
        "column": key[3],
        "change": ", ".join(changed),
        "previous": a,
        "current": b,
        "delta": b - a if _is_number(a) and _is_number(b) else None,
        "previous_status": old.get("status"),
        "current_status": new.get("status"),
    }


def compare_results(
    *, previous: ReportSnapshot, results: Mapping[str, Any], input_hash: str, method: Mapping
) -> dict[str, Any]:
    """What changed from ``previous``: input, software, and every cell that moved."""
    old, new = _cell_index(previous.results), _cell_index(results)
    shared = [k for k in new if k in old]
    moved = [
        _moved_cell(k, old[k], new[k])
        for k in shared
        if any(not _same(old[k].get(f), new[k].get(f)) for f in COMPARED_FIELDS)
    ]
    label = " / ".join
    return {
        "previous_snapshot": previous.pk,
        "input_changed": previous.input_hash != input_hash,
        "previous_input_hash": previous.input_hash,
        "software_changed": previous.method.get("package_versions")
        != method.get("package_versions"),
        "n_cells_compared": len(shared),
        "n_cells_moved": len(moved),
        "added": [label(k) for k in new if k not in old],
        "removed": [label(k) for k in old if k not in new],
        "cells": moved,
    }
