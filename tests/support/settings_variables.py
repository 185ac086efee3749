"""The environment variables medhelm_site/settings/ reads, each with its default, read from
the settings' source (not their values in a test run, which the test settings change).

A variable is read by `os.environ.get("X", default)`, `os.environ["X"]`, `"X" in os.environ`
or one of medhelm_site.settings.env's `env_bool`/`env_list`/`env_positive_int("X", default)`;
`os.environ.get(f"PREFIX_{...}_SUFFIX", ...)` reads a family, named `PREFIX_*_SUFFIX`. The
default is the expression given there, or the constant after `or` when the value read is
`... or "fallback"` (an empty value then means the fallback). It is evaluated with DEBUG off
(production) and on; a default that needs any other setting (the data folder, the log
format) is `computed`, described in words by the docs.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

SETTINGS = Path(__file__).resolve().parents[2] / "medhelm_site" / "settings"
_ENV_READERS = {"env_bool", "env_list", "env_positive_int"}


@dataclass(frozen=True)
class Variable:
    name: str  # the variable, or a family PREFIX_*_SUFFIX
    source: str  # settings module and line, for messages
    has_default: bool  # False: read only when set (`"X" in os.environ`)
    computed: bool  # the default needs another setting than DEBUG
    production: object = None  # the default with DEBUG off
    debugging: object = None  # the default with DEBUG on

    @property
    def depends_on_debug(self) -> bool:
        return not self.computed and self.production != self.debugging


def _is_os_environ(node: ast.AST) -> bool:
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "environ"
        and isinstance(node.value, ast.Name)
        and node.value.id == "os"
    )


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):  # f"PREFIX_{...}_SUFFIX"
        parts = [v.value if isinstance(v, ast.Constant) else "*" for v in node.values]
        return "".join(parts)
    return None


def _read(node: ast.AST) -> tuple[str, ast.AST | None] | None:
    """(name, default expression) when the node reads a variable."""
    if isinstance(node, ast.Call):
        func = node.func
        reader = (
            isinstance(func, ast.Attribute) and func.attr == "get" and _is_os_environ(func.value)
        ) or (isinstance(func, ast.Name) and func.id in _ENV_READERS)
        if reader and node.args and (name := _name(node.args[0])):
            return name, node.args[1] if len(node.args) > 1 else None
    if (
        isinstance(node, ast.Subscript)
        and _is_os_environ(node.value)
        and (name := _name(node.slice))
    ):
        return name, None
    if (
        isinstance(node, ast.Compare)
        and len(node.ops) == 1
        and isinstance(node.ops[0], ast.In)
        and _is_os_environ(node.comparators[0])
        and (name := _name(node.left))
    ):
        return name, None
    return None


def _fallback(tree: ast.AST) -> dict[int, ast.AST]:
    """id(read node) -> the constant after `or` in `<read>... or "fallback"`."""
    out: dict[int, ast.AST] = {}
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.BoolOp)
            and isinstance(node.op, ast.Or)
            and isinstance(node.values[-1], ast.Constant)
        ):
            for inner in ast.walk(node.values[0]):
                out[id(inner)] = node.values[-1]
    return out


def _evaluate(expression: ast.AST, debug: bool) -> object:
    code = compile(ast.Expression(expression), "<default>", "eval")
    # the settings' own source, with nothing but DEBUG and no builtins in reach
    return eval(code, {"__builtins__": {}}, {"DEBUG": debug})


def variables_read() -> dict[str, Variable]:
    """Every variable (or family) the settings read, by name."""
    found: dict[str, Variable] = {}
    for module in sorted(SETTINGS.glob("*.py")):
        tree = ast.parse(module.read_text(), filename=str(module))
        fallbacks = _fallback(tree)
        for node in ast.walk(tree):
            read = _read(node)
            if read is None:
                continue
            name, default = read
            source = f"{module.name}:{node.lineno}"
            if default is None:
                variable = Variable(name, source, has_default=False, computed=False)
            else:
                fallback = fallbacks.get(id(node))
                try:
                    values = [_evaluate(default, debug) for debug in (False, True)]
                except NameError:  # needs another setting: described in words
                    variable = Variable(name, source, has_default=True, computed=True)
                else:
                    if fallback is not None:
                        values = [v or fallback.value for v in values]
                    variable = Variable(name, source, True, False, *values)
            # `"X" in os.environ` and `os.environ["X"]` name a variable read elsewhere with
            # no default; a read with a default says more
            if name not in found or (variable.has_default and not found[name].has_default):
                found[name] = variable
    return found
