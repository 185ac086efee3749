"""HELM items filed under the MedHELM taxonomy by their benchmark (imports/placement.py),
with the map shipped in fixtures/medhelm_benchmarks.json, checked against the schema in the
installed crfm-helm package."""

from __future__ import annotations

import io
import json
import shutil
import subprocess

from django.core.management import call_command

from annotation import services
from annotation.models import ImportJob, Item
from delphi.services import MEDHELM_BENCHMARKS_FIXTURE, ensure_medhelm_taxonomy
from tests.factories import MEDHELM_CRITERIA
from tests.support.helm_runs import HELM_VENV, ROOT, require_helm

MCQA = "simple_mcqa:model=simple_model1"


def test_the_shipped_map_is_what_the_installed_helm_schema_says(tmp_path):
    require_helm()
    out = tmp_path / "map.json"
    subprocess.run(
        [
            str(HELM_VENV / "bin" / "python"),
            str(ROOT / "scripts" / "medhelm_benchmark_map.py"),
            "--out",
            str(out),
        ],
        check=True,
        capture_output=True,
    )
    assert json.loads(out.read_text()) == json.loads(MEDHELM_BENCHMARKS_FIXTURE.read_text())


def test_a_suite_lands_under_medhelm_categories_and_unknown_benchmarks_are_listed(
    coordinator, helm_suite, tmp_path
):
    study = services.create_study(
        name="MedHELM suite",
        created_by=coordinator,
        criteria=MEDHELM_CRITERIA,
        taxonomy_version=ensure_medhelm_taxonomy(),
    )
    # The real multiple-choice run, renamed as MedHELM's med_qa benchmark.
    suite = tmp_path / "suite"
    shutil.copytree(helm_suite, suite)
    renamed = suite / "med_qa:model=simple_model1"
    (suite / MCQA).rename(renamed)
    spec = json.loads((renamed / "run_spec.json").read_text())
    spec["name"] = "med_qa:model=simple_model1"
    (renamed / "run_spec.json").write_text(json.dumps(spec))

    call_command(
        "import_items", str(suite), study=study.pk, file_format="helm", stdout=io.StringIO()
    )

    filed = {
        (i.benchmark, i.taxonomy_node.name if i.taxonomy_node else None)
        for i in Item.objects.filter(study=study)
    }
    assert filed == {
        ("med_qa", "Clinical Decision Support"),
        ("simple1", None),
        ("simple_classification", None),
    }
    job = ImportJob.objects.get(study=study)
    warnings = [e for e in job.errors if e["where"].endswith(": taxonomy")]
    assert {w["where"].split(":")[0] for w in warnings} == {"simple1", "simple_classification"}
    assert all("not in HELM's MedHELM schema" in w["reason"] for w in warnings)
    counts = {s["run"]: s["counts"] for s in job.run_summaries}
    n_med_qa = Item.objects.filter(study=study, benchmark="med_qa").count()
    assert counts["med_qa:model=simple_model1"]["filed_by_benchmark"] == n_med_qa > 0
