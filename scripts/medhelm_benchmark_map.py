"""Write fixtures/medhelm_benchmarks.json: HELM's MedHELM benchmarks -> MedHELM category,
read from schema_medhelm.yaml in the installed crfm-helm package (its run_groups: each of
the five category groups lists its benchmarks as subgroups).

    .cache/helm-venv/bin/python scripts/medhelm_benchmark_map.py   # after `make helm`

The schema of crfm-helm 0.5.16 places each benchmark under one of the five categories, not
under the 22 subcategories: the fixture says so, and the category names are checked against
fixtures/medhelm_taxonomy.json.
"""

from __future__ import annotations

import argparse
import hashlib
import json
from importlib import metadata, resources
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "fixtures" / "medhelm_benchmarks.json"
TAXONOMY = ROOT / "fixtures" / "medhelm_taxonomy.json"
SCHEMA = "benchmark/static/schema_medhelm.yaml"
TOP_GROUP = "medhelm_scenarios"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=OUT)
    out = parser.parse_args().out
    schema_file = resources.files("helm").joinpath(SCHEMA)
    raw = schema_file.read_bytes()
    schema = yaml.safe_load(raw)
    groups = {group["name"]: group for group in schema["run_groups"]}
    categories = {c["name"] for c in json.loads(TAXONOMY.read_text())["categories"]}
    benchmarks: dict[str, str] = {}
    for category_group in groups[TOP_GROUP]["subgroups"]:
        category = groups[category_group]["display_name"]
        if category not in categories:
            raise SystemExit(f"{category!r} is not a category of {TAXONOMY.name}")
        for benchmark in groups[category_group]["subgroups"]:
            if benchmark in benchmarks:
                raise SystemExit(f"{benchmark} is under two categories")
            benchmarks[benchmark] = category
    data = {
        "description": (
            "HELM's MedHELM benchmarks (run group names, the part of a run name before ':') "
            "and the MedHELM category each is filed under in HELM's schema_medhelm.yaml. The "
            "schema places benchmarks under the five categories, not the subcategories."
        ),
        "source": {
            "package": "crfm-helm",
            "version": metadata.version("crfm-helm"),
            "file": f"helm/{SCHEMA}",
            "sha256": hashlib.sha256(raw).hexdigest(),
            "generated_by": "scripts/medhelm_benchmark_map.py",
        },
        "level": "category",
        "benchmarks": dict(sorted(benchmarks.items())),
    }
    out.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"{out}: {len(benchmarks)} benchmarks")


if __name__ == "__main__":
    main()
