"""manage.py import_items."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from annotation.models import ImportJob, Item
from tests.annotation.imports.factories import BAD_JSONL, BAD_JSONL_ERRORS, DATA, HELM_RUN
from tests.factories import UserFactory


def test_command_imports_a_good_file(study, coordinator, capsys):
    call_command(
        "import_items", "--study", str(study.pk), "--format", "csv", str(DATA / "items.csv")
    )

    out = capsys.readouterr().out
    job = ImportJob.objects.get(study=study)
    assert job.created_by == coordinator  # the study's creator by default
    assert f"Import {job.pk} succeeded: 2 items created, 0 unchanged." in out
    assert "checking: 0/2 rows (0%)" in out
    assert Item.objects.filter(study=study).count() == 2


def test_command_imports_a_helm_run_directory_as_someone(study, coordinator, capsys):
    staff = UserFactory(username="admin1", is_staff=True)
    call_command(
        "import_items",
        "--study",
        str(study.pk),
        "--format",
        "helm",
        "--as",
        "admin1",
        str(HELM_RUN),
    )
    out = capsys.readouterr().out
    assert "4 items created" in out
    assert "warning request_states[3]: empty completion" in out
    job = ImportJob.objects.get(study=study)
    assert (job.created_by, job.source_name) == (staff, "medi_qa.zip")
    assert Item.objects.filter(study=study, benchmark="medi_qa").count() == 4


def test_command_prints_every_error_and_fails(study, coordinator, tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(BAD_JSONL)

    with pytest.raises(CommandError, match=r"failed with 6 errors; nothing was saved"):
        call_command("import_items", "--study", str(study.pk), "--format", "jsonl", str(bad))

    err = capsys.readouterr().err
    assert err.splitlines() == [f"{e['where']}: {e['reason']}" for e in BAD_JSONL_ERRORS]
    assert not Item.objects.filter(study=study).exists()


def test_command_refuses_a_locked_study(study, coordinator):
    study.locked_at = timezone.now()
    study.save(update_fields=["locked_at"])
    with pytest.raises(CommandError, match="the study is locked"):
        call_command(
            "import_items", "--study", str(study.pk), "--format", "jsonl", str(DATA / "items.jsonl")
        )
