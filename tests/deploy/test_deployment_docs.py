"""The operator's documentation of the environment keeps up with the settings:

- docs/deployment.md's "Environment" section names every environment variable the settings
  read (single sign-on's were missing once); a name ending in `_*` there covers a family
  (`MEDHELM_IMPORT_*`);
- README's "Configuration" tables (`| variable | default | meaning |`) name every one of them
  and no other, each with the default the settings give it.

A default in the README's default column is written as the settings give it: `value` in
backticks, on/off for a switch, none for an empty value, the production one first (a default
that changes with DJANGO_DEBUG says "debug" and gives the other value too); a row of several
variables lists their defaults in the same order, or one for all when they share it. A default
computed from another setting (the data folder) is described in words.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass

from tests.support.deploy import ROOT
from tests.support.settings_variables import Variable, variables_read

DOCS = ROOT / "docs" / "deployment.md"
README = ROOT / "README.md"
TABLE_HEADER = "| variable | default | meaning |"
VARIABLE = re.compile(r"`([A-Z][A-Z0-9_*<>]*)`")
# one default at the start of the default column, and the comma before the next one
DEFAULT = re.compile(r"(`[^`]*`|on\b|off\b|none\b)(,\s*)?")


def section(text: str, heading: str) -> str:
    start = text.index(f"\n{heading}\n")
    return text[start : text.index("\n## ", start + 1)]


def environment_section() -> str:
    return section(DOCS.read_text(), "## Environment")


def documented(name: str, section: str) -> bool:
    named = set(VARIABLE.findall(section))
    if name in named:
        return True
    families = [n[:-1] for n in named if n.endswith("_*")]
    return any(name.startswith(prefix) for prefix in families)


def shown(value: object) -> str:
    """A default as the README's default column writes it."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if value is None or value == "":
        return "none"
    return str(value)


def family_pattern(name: str) -> re.Pattern[str]:
    return re.compile(
        "".join(".+" if part == "*" else re.escape(part) for part in re.split(r"(\*)", name))
    )


@dataclass(frozen=True)
class Row:
    line: int
    names: list[str]
    default: str  # the default column as written
    defaults: list[str]  # the defaults at its start (backticks removed)


def readme_rows() -> list[Row]:
    """Every row of the tables in README's Configuration section (Single sign-on's too)."""
    text = README.read_text()
    configuration = section(text, "## Configuration")
    first_line = text[: text.index(configuration)].count("\n") + 1
    rows, in_table = [], False
    for number, line in enumerate(configuration.splitlines(), start=first_line):
        if line.startswith("| variable |"):
            assert line == TABLE_HEADER, f"README.md:{number}: a table reads {TABLE_HEADER}"
            in_table = True
            continue
        if not line.startswith("|"):
            in_table = False
            continue
        if not in_table or line.startswith("|---"):
            continue
        cells = [cell.strip() for cell in line.strip("|").split(" | ")]
        assert len(cells) == 3, f"README.md:{number}: three cells: variable, default, meaning"
        defaults, rest = [], cells[1]
        while match := DEFAULT.match(rest):
            defaults.append(match[1].strip("`"))
            rest = rest[match.end() :]
            if not match[2]:
                break
        rows.append(Row(number, VARIABLE.findall(cells[0]), cells[1], defaults))
    return rows


def resolve(name: str, read: dict[str, Variable]) -> Variable | None:
    """The variable (or the family it belongs to) the settings read under this name."""
    if name in read:
        return read[name]
    return next(
        (
            v
            for family, v in read.items()
            if "*" in family and family_pattern(family).fullmatch(name)
        ),
        None,
    )


def test_the_settings_read_variables_this_test_can_see():
    read = variables_read()
    # each way the settings read a variable is seen (else the tests below prove little)
    assert {"SECRET_KEY", "DJANGO_DEBUG", "LOGIN_FAILURE_LIMIT", "JURY_ALLOWED_HOSTS"} <= set(read)
    assert not read["CELERY_RESULT_BACKEND"].has_default  # `"X" in os.environ`
    assert "MEDHELM_OIDC_*_ENDPOINT" in read
    assert read["SECURE_HSTS_SECONDS"].depends_on_debug
    assert read["MEDHELM_REQUEST_LOG"].computed and read["DATABASE_URL"].computed


def test_the_defaults_read_from_the_source_are_those_the_settings_hold(tmp_path):
    """Cross-check of the parser: the settings imported with none of their variables set (but
    SECRET_KEY and the data folder) hold, under each variable's own name, its parsed default."""
    read = variables_read()
    env = {
        k: v
        for k, v in os.environ.items()
        if resolve(k, read) is None and k not in {"DJANGO_SETTINGS_MODULE"}
    }
    env |= {"SECRET_KEY": "x" * 50, "MEDHELM_DATA_DIR": str(tmp_path)}
    dump = (
        "import json, medhelm_site.settings as s\n"
        "print(json.dumps({k: v for k, v in vars(s).items() if k.isupper() and "
        "isinstance(v, (str, int, float, bool, list))}, default=str))"
    )
    result = subprocess.run(
        [sys.executable, "-c", dump], cwd=ROOT, env=env, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]
    settings = json.loads(result.stdout)
    compared = set()
    for name, variable in read.items():
        if name not in settings or name == "SECRET_KEY" or not variable.has_default:
            continue
        if variable.computed:
            continue
        value, default = settings[name], variable.production
        if isinstance(value, list):
            default = [p.strip() for p in str(default).split(",") if p.strip()]
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            default = float(default)
        assert value == default, f"{variable.source}: {name} is {value!r}, parsed {default!r}"
        compared.add(name)
    # a plain string, int(), float(), a list, a switch with DEBUG, `or` a fallback
    assert {
        "EMAIL_HOST",
        "EMAIL_PORT",
        "MEDHELM_READYZ_PING_TIMEOUT",
        "JURY_ALLOWED_HOSTS",
        "SECURE_HSTS_PRELOAD",
        "MEDHELM_OIDC_PROVIDER_NAME",
    } <= compared


def test_deployment_docs_name_every_variable_the_settings_read():
    section = environment_section()
    missing = sorted(n for n in variables_read() if not documented(n, section))
    assert missing == [], f"{DOCS} (## Environment) does not name {missing}"


def test_readme_names_every_variable_the_settings_read_and_no_other():
    read = variables_read()
    rows = readme_rows()
    named: dict[str, int] = {}
    for row in rows:
        for name in row.names:
            assert resolve(name, read) is not None, (
                f"README.md:{row.line}: the settings read no variable {name}"
            )
            assert name not in named, (
                f"README.md:{row.line}: {name} again (first at line {named[name]})"
            )
            named[name] = row.line
    covered = {resolve(name, read).name for name in named}
    missing = sorted(set(read) - covered)
    assert missing == [], f"README.md (## Configuration) has no row for {missing}"


def default_problems(row: Row, read: dict[str, Variable]) -> list[str]:
    """What is wrong with the default column of one README row (nothing: [])."""
    variables = [resolve(name, read) for name in row.names]
    where = f"README.md:{row.line} ({', '.join(row.names)}): default {row.default!r}"
    if any(v.computed or not v.has_default for v in variables):
        # described in words; a row mixing them with literal ones could not say which is which
        if not all(v.computed or not v.has_default for v in variables):
            return [f"{where}: split the row (some defaults are computed, some not)"]
        if not row.default or row.defaults:
            return [f"{where}: the default is computed from other settings: say from what"]
        return []
    expected = [shown(v.production) for v in variables]
    problems = []
    if row.defaults != expected and not (len(set(expected)) == 1 and row.defaults == expected[:1]):
        problems.append(f"{where}: the settings give {expected}")
    for v in variables:
        if v.depends_on_debug and not (
            "debug" in row.default and shown(v.debugging) in row.default
        ):
            problems.append(f"{where}: with debug on, {v.name} defaults to {shown(v.debugging)!r}")
    return problems


def test_readme_gives_each_variable_its_default():
    read = variables_read()
    rows = [row for row in readme_rows() if all(resolve(n, read) for n in row.names)]
    assert rows, "README.md (## Configuration) has no table of variables"
    problems = [problem for row in rows for problem in default_problems(row, read)]
    assert problems == [], "\n".join(problems)
