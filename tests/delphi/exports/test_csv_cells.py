"""How the exports write a cell: up to 10 significant digits, true / false, numbers never
quoted (a negative kappa stays a number), formula-like text defused by the shared writer."""

from __future__ import annotations

import pytest

from delphi.exports.registry import csv_value
from medhelm_site.common.csv_export import csv_bytes


@pytest.mark.parametrize(
    ("value", "written"),
    [
        (100.0, "100"),
        (200 / 3, "66.66666667"),
        (-0.1224489795918367, "-0.1224489796"),
        (1.9073486328125e-06, "1.907348633e-06"),
        (True, "true"),
        (False, "false"),
        (None, ""),
        (-3, "-3"),
        ("=SUM(A1)", "'=SUM(A1)"),
    ],
)
def test_a_cell_is_written_as_the_exports_always_wrote_it(value, written):
    content = csv_bytes(["x", "y"], [{"x": csv_value(value), "y": "end"}]).decode()
    assert content == f"x,y\r\n{written},end\r\n"
