"""Every number of a report's analyses stays what it was: each case of
tests/support/report_cells.py (every clinician form, both machine sides, BCa and percentile,
the leave-one-judge-out juries, rows too small for a statistic) is computed again and every
cell, difference, jury composition and sensitivity entry compared with the reference saved in
tests/agreement/data/report_cells.json (generated from main at ab96020, before issue 32's
speed work): floats to 1e-12 (relative above 1), everything else exactly."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest

from agreement.services.computing import canonical_hash
from tests.support import report_cells

TOLERANCE = 1e-12


@pytest.fixture(scope="module")
def reference() -> dict[str, Any]:
    return json.loads(report_cells.DATA_FILE.read_text())


@pytest.fixture(scope="module")
def tables() -> dict[str, Any]:
    return {name: report_cells.table_of(name) for name in report_cells.TABLES}


def differences(expected: Any, actual: Any, where: str = "") -> list[str]:
    """Where ``actual`` differs from ``expected`` (floats beyond TOLERANCE), as readable lines."""
    if isinstance(expected, dict) and isinstance(actual, dict):
        if expected.keys() != actual.keys():
            return [f"{where}: keys {sorted(expected)} != {sorted(actual)}"]
        return [
            line for k in expected for line in differences(expected[k], actual[k], f"{where}.{k}")
        ]
    if isinstance(expected, list) and isinstance(actual, list):
        if len(expected) != len(actual):
            return [f"{where}: {len(actual)} entries, expected {len(expected)}"]
        return [
            line
            for i, (e, a) in enumerate(zip(expected, actual, strict=True))
            for line in differences(e, a, f"{where}[{i}]")
        ]
    numbers = (int, float)
    if (
        isinstance(expected, numbers)
        and isinstance(actual, numbers)
        and not isinstance(expected, bool)
        and not isinstance(actual, bool)
    ):
        if isinstance(expected, int) and isinstance(actual, int):
            return [] if expected == actual else [f"{where}: {actual} != {expected}"]
        if math.isclose(actual, expected, rel_tol=TOLERANCE, abs_tol=TOLERANCE):
            return []
        return [f"{where}: {actual!r} != {expected!r} (off by {actual - expected:.3g})"]
    return [] if expected == actual else [f"{where}: {actual!r} != {expected!r}"]


def test_the_reference_covers_every_form_and_machine_side(reference) -> None:
    """The pinned cases reach every path a report's cells take (else the pin proves little)."""
    seen = {
        (c["clinician_form"] or c["machine_form"], c["status"])
        for case in reference["cases"].values()
        for c in case["cells"]
    }
    for path in (
        "medhelm_pairwise",
        "twoway_raw",
        "oneway_z",
        "machine_zscores",
        "machine_offsets_fitted",
    ):
        assert (path, "ok") in seen
    assert any(s == "not_estimable" for _p, s in seen)
    sections = {c["section"] for case in reference["cases"].values() for c in case["cells"]}
    assert sections == {"overall", "criterion", "jury_composition"}


@pytest.mark.parametrize("case", sorted(report_cells.CASES))
def test_every_number_equals_the_reference(case, reference, tables) -> None:
    assert reference["resamples"] == report_cells.RESAMPLES
    assert reference["seed"] == report_cells.REPORT_SEED
    actual = report_cells.numbers_of(report_cells.compute(case, tables))
    # through JSON, as the reference was: the same types on both sides
    actual = json.loads(json.dumps(actual))
    found = differences(reference["cases"][case], actual, case)
    assert not found, f"{len(found)} difference(s):\n" + "\n".join(found[:20])


def test_a_change_in_the_twelfth_digit_is_found() -> None:
    cell = {"estimate": 0.5, "status": "ok", "n_items": 3}
    assert differences(cell, dict(cell)) == []
    assert differences(cell, {**cell, "estimate": 0.5 + 2e-12}) != []
    assert differences(cell, {**cell, "n_items": 4}) != []
    assert differences(cell, {**cell, "status": "insufficient"}) != []


#: canonical_hash of each table as main computed it at ab96020: a stored report's input hash
#: must keep matching the same scores (its score-table downloads check it).
INPUT_HASHES = {
    "demo": "3b04e45862ce56cf04407850260e30f1f106a6ef5addbb8eb0fc38332cd33037",
    "medhelm": "32806e3a3c18f7e6d7cf37d7e994d30b8f205fde9ba7e6da1e2a0e482410f271",
    "complete": "3b17cd92a88258fb26bef4b1a796c32d1088991f730f8c98cae8c50d09478062",
    "shared": "139201babcdc1cc6d92117250802a0265cdd29927c48e433e5a0f3857c6af541",
}


@pytest.mark.parametrize("name", sorted(INPUT_HASHES))
def test_the_input_hash_of_the_same_scores_is_unchanged(name, tables) -> None:
    assert canonical_hash(tables[name]) == INPUT_HASHES[name]
