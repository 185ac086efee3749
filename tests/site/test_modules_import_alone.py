"""Every module of the site imports on its own in a fresh interpreter (a child forked from a
server that has imported only third-party packages, and run django.setup() for a module that
needs the app registry, as a command or a worker runs it first).

An import cycle hides while the test suite imports modules in a lucky order and shows up
when a command or a worker imports one module first; this test imports each one first.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.support.site_modules import ROOT, module_files

#: Third-party packages the server imports once before forking (none of the site's own
#: modules: those are what each child imports first). Only top-level imports that need no
#: Django settings.
WARM = ("django", "celery", "numpy", "pandas", "scipy.stats", "matplotlib", "pingouin")

#: Said by a child of the plain server for a module that needs the app registry.
NEEDS_SETUP = "needs django.setup()"

#: A fork server: imports the WARM packages (argv[2:]) and, in "setup" mode (argv[1]), runs
#: django.setup() once, as a command or a worker does before anything else; then reads module
#: names, one a line, and for each forks a child that imports it first thing and answers
#: "name<TAB>ok" or "name<TAB>the error's last line". A plain server's child answers
#: NEEDS_SETUP for a module that needs the app registry, which then goes to a setup server. A
#: new interpreter per module cost about 500 s of CI for ~400 modules, and a django.setup()
#: in each child about 180 s.
SERVER = r"""
import os, sys, traceback
mode, warm = sys.argv[1], sys.argv[2:]
for name in warm:
    __import__(name)
if mode == "setup":
    import django
    django.setup()

def import_first(module):
    try:
        __import__(module)
        return "ok"
    except BaseException as exc:
        if mode == "plain" and type(exc).__name__ == "AppRegistryNotReady":
            return NEEDS_SETUP
        return traceback.format_exc().strip().splitlines()[-1]

for line in sys.stdin:
    module = line.strip()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        os.write(write, import_first(module).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as answer:
        result = answer.read().decode() or "the child died without an answer"
    os.waitpid(pid, 0)
    print(module + "\t" + result.replace("\n", " "), flush=True)
""".replace("NEEDS_SETUP", repr(NEEDS_SETUP))


def _serve(mode: str, modules: list[str]) -> dict[str, str]:
    """Each of ``modules`` imported first by a child of a ``mode`` server: module -> answer."""
    if not modules:
        return {}
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "medhelm_site.test_settings"}
    done = subprocess.run(
        [sys.executable, "-c", SERVER, mode, *WARM],
        input="\n".join(modules) + "\n",
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    answers = dict(line.split("\t", 1) for line in done.stdout.splitlines())
    assert set(answers) == set(modules), set(modules) - set(answers)
    return answers


def import_each_first(modules: list[str]) -> list[str]:
    """The error of each module of ``modules`` that does not import first thing in a fresh
    interpreter (one forked from a server above; after django.setup() only where the module
    needs the app registry), as "module: error"."""
    answers = _serve("plain", modules)
    needing = [m for m in modules if answers[m] == NEEDS_SETUP]
    answers.update(_serve("setup", needing))
    return [f"{m}: {answers[m]}" for m in modules if answers[m] != "ok"]


@pytest.mark.slow
@pytest.mark.timeout(1200)
def test_every_module_imports_first():
    modules = list(module_files())
    assert len(modules) > 100  # the walk found the packages
    half = len(modules) // 2  # two servers: one a core
    with ThreadPoolExecutor(max_workers=2) as pool:
        failures = [
            f
            for part in pool.map(import_each_first, (modules[:half], modules[half:]))
            for f in part
        ]
    assert failures == []


def test_a_module_that_cannot_import_first_is_named_with_its_error():
    # the guard itself: a module that cannot be imported is reported with its error
    assert import_each_first(["agreement.stats.icc", "agreement.stats.no_such_module"]) == [
        "agreement.stats.no_such_module: ModuleNotFoundError: No module named "
        "'agreement.stats.no_such_module'"
    ]
