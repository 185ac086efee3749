"""The site's own Python modules, as the tests that read or import every one of them see them:
the apps (medhelm_site with its accounts and common packages), migrations left out (generated;
they import no layer of the apps)."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("medhelm_site", "delphi", "annotation", "jury", "agreement")


def module_name(path: Path, root: Path = ROOT) -> str:
    """The dotted name of the module at ``path``; a package's __init__.py is the package."""
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def module_files(root: Path = ROOT, apps: tuple[str, ...] = APPS) -> dict[str, Path]:
    """Module name -> file, for every module of ``apps`` under ``root``, in path order."""
    return {
        module_name(path, root): path
        for app in apps
        for path in sorted((root / app).rglob("*.py"))
        if "migrations" not in path.parts
    }
