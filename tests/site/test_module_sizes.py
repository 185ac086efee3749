"""No module of app code is over 450 lines (DESIGN.md: past ~400 lines a module becomes a
package, split by what it is about); migrations are generated, not read, and left out."""

from __future__ import annotations

from tests.support.site_modules import ROOT, module_files

MAX_LINES = 450


def test_no_module_of_app_code_is_over_the_limit():
    paths = list(module_files().values())
    assert len(paths) > 100  # the walk found the packages
    too_long = {
        str(path.relative_to(ROOT)): n
        for path in paths
        if (n := len(path.read_text().splitlines())) > MAX_LINES
    }
    assert too_long == {}
