"""README.md's Layout section names only folders and files that exist (they were renamed into
packages once and the section kept the old names)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def layout_section() -> str:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index("\n## Layout\n")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def test_every_path_the_layout_names_exists():
    # folders (`annotation/imports/`) and files (`bench/README.md`); not URLs (`/api/`)
    pattern = r"`(\w[\w./-]*/|\w[\w/-]*\.(?:py|md|json|toml|txt))`"
    named = set(re.findall(pattern, layout_section()))
    assert len(named) >= 10, named
    missing = sorted(path for path in named if not (ROOT / path).exists())
    assert not missing, f"README.md's Layout names paths that do not exist: {missing}"
