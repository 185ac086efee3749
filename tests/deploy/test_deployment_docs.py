"""docs/deployment.md's "Environment" section names every environment variable the settings
read, so that an operator setting up production from it misses none (single sign-on's were
missing). A name ending in `_*` there covers a family (`MEDHELM_IMPORT_*`)."""

from __future__ import annotations

import re

from tests.support.deploy import ROOT

# The settings are a package of parts (core, security, workers, observability, identity).
SETTINGS = ROOT / "medhelm_site" / "settings"
DOCS = ROOT / "docs" / "deployment.md"
# os.environ.get("X"), os.environ["X"], "X" in os.environ, env_bool("X"), env_list("X")...
READ = re.compile(
    r'(?:os\.environ\.get\(|os\.environ\[|env_\w+\()\s*"([A-Z][A-Z0-9_]+)"'
    r'|"([A-Z][A-Z0-9_]+)" in os\.environ'
)
# f"PREFIX_{...}_SUFFIX": a family, documented as PREFIX_*_SUFFIX
FAMILY = re.compile(r'os\.environ\.get\(\s*f"([A-Z][A-Z0-9_]*)\{[^}]*\}([A-Z0-9_]*)"')


def variables_read() -> set[str]:
    text = "\n".join(part.read_text() for part in sorted(SETTINGS.glob("*.py")))
    names = {a or b for a, b in READ.findall(text)}
    names |= {f"{prefix}*{suffix}" for prefix, suffix in FAMILY.findall(text)}
    return names


def environment_section() -> str:
    text = DOCS.read_text()
    start = text.index("## Environment")
    return text[start : text.index("\n## ", start + 1)]


def documented(name: str, section: str) -> bool:
    named = set(re.findall(r"`([A-Z][A-Z0-9_*<>]*)`", section))
    if name in named:
        return True
    families = [n[:-1] for n in named if n.endswith("_*")]
    return any(name.startswith(prefix) for prefix in families)


def test_the_settings_read_variables_this_test_can_see():
    names = variables_read()
    # the parser sees each way the settings read a variable (else the next test proves little)
    assert {"SECRET_KEY", "DJANGO_DEBUG", "CELERY_RESULT_BACKEND", "LOGIN_FAILURE_LIMIT"} <= names
    assert "MEDHELM_OIDC_*_ENDPOINT" in names


def test_deployment_docs_name_every_variable_the_settings_read():
    section = environment_section()
    missing = sorted(n for n in variables_read() if not documented(n, section))
    assert missing == [], f"{DOCS} (## Environment) does not name {missing}"
