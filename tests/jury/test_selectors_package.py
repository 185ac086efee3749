"""The jury's reads are a package split by what each part is about (jury/selectors/), each
part small, none importing the package or forming an import circle with another; the
package re-exports what the pages, commands and forms call, so callers keep `selectors.X`."""

from __future__ import annotations

import ast
from pathlib import Path

from jury import selectors

PACKAGE = Path(selectors.__file__).parent
MAX_LINES = 300
# What callers use (jury.views, jury.forms, the run_jury command, bench/, tests).
PUBLIC = {
    "ATTEMPT_COLUMNS",
    "CALL_COLUMNS",
    "FAILED",
    "RunProgress",
    "RunWaiting",
    "attempt_rows",
    "call_rows",
    "judge_health",
    "latest_prompt_template",
    "prompt_versions",
    "provider_outages",
    "recent_runs",
    "run_errors",
    "run_filter_choices",
    "run_flags",
    "run_progress",
    "run_status",
    "run_waiting",
    "study_run",
    "truncated_calls",
}


def parts() -> dict[str, Path]:
    assert PACKAGE.name == "selectors" and (PACKAGE / "__init__.py").is_file(), (
        f"jury.selectors is a single module ({selectors.__file__}), not a package"
    )
    return {p.stem: p for p in PACKAGE.glob("*.py") if p.stem != "__init__"}


def test_each_part_is_small():
    sizes = {name: len(path.read_text().splitlines()) for name, path in parts().items()}
    assert len(sizes) >= 3
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def imported_parts(path: Path) -> set[str]:
    """The sibling parts (or the package itself: "") a part imports at module level."""
    found = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "jury.selectors":
                found |= {alias.name for alias in node.names} & set(parts()) or {""}
            elif node.module.startswith("jury.selectors."):
                found.add(node.module.removeprefix("jury.selectors."))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "jury.selectors" or alias.name.startswith("jury.selectors."):
                    found.add(alias.name.removeprefix("jury.selectors").lstrip("."))
    return found


def test_no_part_imports_the_package_and_there_is_no_circle():
    graph = {name: imported_parts(path) for name, path in parts().items()}
    assert {name: deps for name, deps in graph.items() if "" in deps} == {}
    done: set[str] = set()

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, f"import circle: {' -> '.join((*path, name))}"
        if name in done:
            return
        for dep in graph[name]:
            visit(dep, (*path, name))
        done.add(name)

    for name in graph:
        visit(name, ())


def test_the_package_offers_what_callers_use():
    assert PUBLIC - set(dir(selectors)) == set()
