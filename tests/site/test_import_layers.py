"""No modules of the site import each other in a circle, counting the imports inside
functions: neither inside an app nor across apps (DESIGN.md: dependencies point one way).

An import written inside a function hides a circle from the interpreter (the import runs
after both modules have loaded) and from test_modules_import_alone.py, but the layers still
point both ways. This test reads every module's imports with ``ast`` (at module level and in
any function or class) and looks for a circle among the modules of the apps. Imports under
``if TYPE_CHECKING:`` are left out: they never run, and name types only.

A module is named by its dotted path; a package's __init__.py is the module named by the
package. ``from pkg import name`` is an import of the submodule pkg.name where there is one,
else of pkg itself; importing a.b.c is an edge to a.b.c only, not to the packages a and a.b
Python runs on the way (every module of a package would otherwise form a circle with an
__init__.py that re-exports it).
"""

from __future__ import annotations

import ast
from pathlib import Path

from tests.support.site_modules import APPS, ROOT, module_files

Graph = dict[str, set[str]]


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def _run_time_nodes(tree: ast.AST) -> list[ast.AST]:
    """Every node of ``tree`` except the bodies of ``if TYPE_CHECKING:`` blocks."""
    nodes, stack = [], [tree]
    while stack:
        node = stack.pop()
        nodes.append(node)
        if isinstance(node, ast.If) and _is_type_checking(node.test):
            stack.extend(node.orelse)
            continue
        stack.extend(ast.iter_child_nodes(node))
    return nodes


def imported_modules(module: str, path: Path, known: set[str]) -> set[str]:
    """The modules of ``known`` that ``module`` (the file at ``path``) imports anywhere in its
    code, each resolved to the module the import names."""
    is_package = path.name == "__init__.py"
    package = module if is_package else module.rpartition(".")[0]
    found: set[str] = set()
    for node in _run_time_nodes(ast.parse(path.read_text(), filename=str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from the package, one level up per dot past the first
                base = package.split(".")
                base = base[: len(base) - (node.level - 1)]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            for alias in node.names:
                submodule = f"{source}.{alias.name}"
                found.add(submodule if submodule in known else source)
    return (found & known) - {module}


def import_graph(root: Path, apps: tuple[str, ...]) -> Graph:
    """Module -> the modules of ``apps`` it imports."""
    sources = module_files(root, apps)
    known = set(sources)
    return {m: imported_modules(m, path, known) for m, path in sources.items()}


def find_cycles(graph: Graph) -> list[list[str]]:
    """One circle for each group of modules that import each other (a strongly connected
    component of more than one module), as a path that ends where it starts."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[set[str]] = []

    def connect(node: str) -> None:  # Tarjan's algorithm; the graphs are a few hundred nodes
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(component)

    for node in sorted(graph):
        if node not in index:
            connect(node)
    return [_circle_in(graph, component) for component in components]


def _circle_in(graph: Graph, component: set[str]) -> list[str]:
    """A shortest circle through the first module (by name) of ``component``."""
    start = min(component)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        following = []
        for node in frontier:
            for nxt in sorted(graph[node] & component):
                if nxt == start:
                    return [*paths[node], start]
                if nxt not in paths:
                    paths[nxt] = [*paths[node], nxt]
                    following.append(nxt)
        frontier = following
    raise AssertionError(f"no circle in {sorted(component)}")  # pragma: no cover


def test_no_modules_of_the_site_import_each_other_in_a_circle():
    graph = import_graph(ROOT, APPS)
    assert len(graph) > 100  # the walk found the packages
    # the walk reads the real code as meant: a from-import of a submodule, an import inside
    # a function and an import across apps are all seen
    assert "agreement.services.renderings" in graph["agreement.services"]
    assert "medhelm_site.celery" in graph["medhelm_site.health"]
    assert "annotation.models" in graph["agreement.models"]
    circles = [" -> ".join(circle) for circle in find_cycles(graph)]
    assert not circles, "modules that import each other in a circle:\n" + "\n".join(circles)


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_circle_through_an_import_inside_a_function_is_named(tmp_path):
    _write(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/printing.py": (
                "def pdf():\n    from app.services.renderings import body\n    return body()\n"
            ),
            "app/services/__init__.py": "from app.services.renderings import body\n",
            "app/services/renderings.py": "from app import printing\n\ndef body(): ...\n",
            "app/views.py": "from . import printing\nfrom .services import body\n",
        },
    )
    assert find_cycles(import_graph(tmp_path, ("app",))) == [
        ["app.printing", "app.services.renderings", "app.printing"]
    ]


def test_imports_are_resolved_to_the_modules_they_name(tmp_path):
    _write(
        tmp_path,
        {
            "app/__init__.py": "",
            "app/models.py": "import os\n",
            "app/plots/__init__.py": "from .numbers import fmt\n",
            "app/plots/numbers.py": "def fmt(): ...\n",
            "app/services/__init__.py": "",
            "app/services/jobs.py": (
                "from typing import TYPE_CHECKING\n"
                "import app.models\n"
                "from app import plots\n"
                "from ..services import exports\n"
                "from app.plots import fmt\n"
                "if TYPE_CHECKING:\n    from app import views\n"
            ),
            "app/services/exports.py": "",
            "app/views.py": "",
        },
    )
    graph = import_graph(tmp_path, ("app",))
    assert graph["app.services.jobs"] == {
        "app.models",
        "app.plots",
        "app.services.exports",
    }
    assert graph["app.plots"] == {"app.plots.numbers"}
    assert find_cycles(graph) == []
