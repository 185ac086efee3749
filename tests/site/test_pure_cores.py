"""The statistics and the Delphi rules import without Django (or Celery): they stay usable
and testable as plain Python, as DESIGN.md asks."""

import subprocess
import sys

import pytest

PURE_MODULES = [
    "agreement.renderings",
    "agreement.stats",
    "annotation.calibration_stats",
    "delphi.consensus",
    "delphi.stats",
    "delphi.stats.display",
    "delphi.suggestions",
    "medhelm_site.common.csv_export",
    "medhelm_site.common.errors",
    "medhelm_site.common.figures",
    "medhelm_site.common.text_limits",
]


@pytest.mark.parametrize("module", PURE_MODULES)
def test_imports_without_django(module):
    code = (
        f"import sys, {module}; "
        "loaded = [m for m in ('django', 'celery') if m in sys.modules]; "
        "print(','.join(loaded))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert done.stdout.strip() == "", f"{module} loads {done.stdout.strip()}"
