"""Where the test suite's time goes: per module and per test, from pytest's JUnit XML.

    make test PYTEST_ARGS='--junitxml=var/suite-defaults.xml'
    .venv/bin/python bench/suite_durations.py var/suite-defaults.xml [var/suite-postgres.xml]
        [--top 30] [--markdown]

Each file is one stack's run (CI runs two at once: .ci/run). A test's time is pytest's
`total` (setup, call and teardown), so a module-scoped fixture counts in its first test.
Prints, per stack, the wall sum, the modules by time (tests, seconds, share) and the slowest
tests; --markdown prints the same as tables for bench/README.md.

    .venv/bin/python bench/suite_durations.py var/suite-defaults.xml --save tests/module_seconds.json

writes each module's seconds, which the parallel run (tests/conftest.py) uses to start the
longest modules first; refresh it when modules' times change much (a module it does not
name starts after the ones it does).
"""

from __future__ import annotations

import argparse
import json
import sys
import xml.etree.ElementTree as ET
from collections import defaultdict
from pathlib import Path


def read_cases(path: Path) -> list[tuple[str, str, float, str]]:
    """(module, test, seconds, outcome) for every test case in a JUnit XML file."""
    cases = []
    for case in ET.parse(path).getroot().iter("testcase"):
        classname = case.get("classname", "")
        module = classname.replace(".", "/")
        # pytest names a test in a class module.Class: keep the module's file
        while module and not Path(module + ".py").exists() and "/" in module:
            module = module.rsplit("/", 1)[0]
        outcome = "passed"
        for tag in ("failure", "error", "skipped"):
            if case.find(tag) is not None:
                outcome = tag
        cases.append((module + ".py", case.get("name", ""), float(case.get("time", 0)), outcome))
    return cases


def summarise(path: Path, *, top: int, markdown: bool) -> None:
    cases = read_cases(path)
    total = sum(seconds for _, _, seconds, _ in cases)
    by_module: dict[str, list[float]] = defaultdict(list)
    for module, _, seconds, _ in cases:
        by_module[module].append(seconds)
    outcomes: dict[str, int] = defaultdict(int)
    for *_, outcome in cases:
        outcomes[outcome] += 1
    counts = ", ".join(f"{n} {name}" for name, n in sorted(outcomes.items()))
    print(f"\n{path.name}: {len(cases)} tests ({counts}), {total:.0f} s in tests")
    modules = sorted(by_module.items(), key=lambda kv: -sum(kv[1]))
    rows = [(m, len(t), sum(t), sum(t) / total if total else 0.0) for m, t in modules[:top]]
    tests = sorted(cases, key=lambda c: -c[2])[:top]
    if markdown:
        print("\n| module | tests | seconds | share |\n|---|---|---|---|")
        for module, n, seconds, share in rows:
            print(f"| `{module}` | {n} | {seconds:.1f} | {share:.1%} |")
        print("\n| test | seconds |\n|---|---|")
        for module, name, seconds, _ in tests:
            print(f"| `{module}::{name}` | {seconds:.1f} |")
        return
    print(f"{'module':70} {'tests':>6} {'seconds':>9} {'share':>7}")
    for module, n, seconds, share in rows:
        print(f"{module:70} {n:6d} {seconds:9.1f} {share:7.1%}")
    print(f"\nslowest {top} tests:")
    for module, name, seconds, _ in tests:
        print(f"{seconds:9.1f}  {module}::{name}")


def save_module_seconds(paths: list[Path], target: Path) -> None:
    """Each module's seconds (the largest over the files given) as JSON, longest first."""
    seconds: dict[str, float] = defaultdict(float)
    for path in paths:
        per_file: dict[str, float] = defaultdict(float)
        for module, _, took, _ in read_cases(path):
            per_file[module] += took
        for module, took in per_file.items():
            seconds[module] = max(seconds[module], took)
    ordered = dict(sorted(((m, round(t, 1)) for m, t in seconds.items()), key=lambda kv: -kv[1]))
    target.write_text(json.dumps(ordered, indent=1) + "\n")
    print(f"wrote {len(ordered)} modules' seconds to {target}")


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="+", type=Path)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--markdown", action="store_true")
    parser.add_argument("--save", type=Path, help="write each module's seconds to this JSON file")
    args = parser.parse_args(argv)
    if args.save:
        save_module_seconds(args.files, args.save)
        return
    for path in args.files:
        summarise(path, top=args.top, markdown=args.markdown)


if __name__ == "__main__":
    main(sys.argv[1:])
