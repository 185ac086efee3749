"""One cap on what all the runs of a HELM suite zip unpack to together
(MEDHELM_IMPORT_MAX_UNPACKED_BYTES): the per-zip limit holds for each run, so without it a
suite of many runs, each within that limit, could unpack without end."""

from __future__ import annotations

import io

import pytest
from django.core.management import CommandError, call_command

from annotation.models import ImportJob, Item
from tests.annotation.imports.factories import sample_run, start, suite_zip

MODELS = ("vendor/model-a", "vendor/model-b", "vendor/model-c")
FOLDERS = [f"medi_qa:model={m.replace('/', '_')}" for m in MODELS]


@pytest.fixture
def suite():
    """Three runs of the sample run, one per model: (the zip, what one run unpacks to)."""
    runs = {folder: sample_run(model) for folder, model in zip(FOLDERS, MODELS, strict=True)}
    sizes = {sum(len(data) for data in files.values()) for files in runs.values()}
    return suite_zip(runs), max(sizes)


@pytest.mark.parametrize("on_bad_run", ["refuse", "skip"])
def test_a_suite_above_the_cap_fails_naming_the_cap_and_run_and_saves_nothing(
    study, coordinator, settings, suite, on_bad_run
):
    data, run_bytes = suite
    settings.MEDHELM_IMPORT_ZIP_MAX_TOTAL_BYTES = run_bytes + 100  # each run is within it
    limit = settings.MEDHELM_IMPORT_MAX_UNPACKED_BYTES = run_bytes * 5 // 2  # the third is not

    job = start(
        study, coordinator, data, file_format="helm", name="suite.zip", on_bad_run=on_bad_run
    )

    assert job.status == ImportJob.Status.FAILED
    [error] = [e for e in job.errors if e.get("level") != "warning"]
    assert error["where"] == "file"
    reason = error["reason"]
    for part in (
        "suite.zip",
        f"{limit:,} bytes",
        "MEDHELM_IMPORT_MAX_UNPACKED_BYTES",
        f"run tests/{FOLDERS[2]}/ passes the limit",
        f"the runs before tests/{FOLDERS[2]}/ unpack to {2 * run_bytes:,} bytes",
        "nothing was imported",
    ):
        assert part in reason, (part, reason)
    assert not Item.objects.filter(study=study).exists()
    assert job.created_items == 0 and job.runs_done == 0


def test_a_suite_within_the_cap_imports_every_run(study, coordinator, settings, suite):
    data, run_bytes = suite
    settings.MEDHELM_IMPORT_ZIP_MAX_TOTAL_BYTES = run_bytes + 100
    settings.MEDHELM_IMPORT_MAX_UNPACKED_BYTES = 3 * run_bytes + 100

    job = start(study, coordinator, data, file_format="helm", name="suite.zip")

    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert [s["status"] for s in job.run_summaries] == ["imported"] * 3
    assert set(Item.objects.values_list("model_name", flat=True)) == set(MODELS)


def test_the_command_shows_the_cap_error(study, settings, suite, tmp_path):
    data, run_bytes = suite
    settings.MEDHELM_IMPORT_ZIP_MAX_TOTAL_BYTES = run_bytes + 100
    settings.MEDHELM_IMPORT_MAX_UNPACKED_BYTES = run_bytes * 3 // 2
    path = tmp_path / "suite.zip"
    path.write_bytes(data)

    err = io.StringIO()

    with pytest.raises(CommandError, match="nothing was saved"):
        call_command("import_items", str(path), study=study.pk, file_format="helm", stderr=err)
    assert f"MEDHELM_IMPORT_MAX_UNPACKED_BYTES): the runs before tests/{FOLDERS[1]}/" in (
        err.getvalue()
    )
    assert not Item.objects.exists()
