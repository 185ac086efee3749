"""docs/deploy/backup.sh and restore.sh, round trip: an installation with the demo study
(ratings, Delphi panel, judge) and an agreement report, backed up, restored into a fresh
database and data folder, holds the same rows of every model, the same uploaded files and
the same report numbers, both the stored report and one computed again with its seed."""

from __future__ import annotations

import json
import shutil

import pytest

from tests.support.deploy import (
    DEPLOY,
    django_json,
    manage,
    model_counts,
    postgres_server,
    production_env,
    run,
    scratch_database,
)
from tests.support.unavailable import unavailable

pytestmark = [pytest.mark.postgres, pytest.mark.slow, pytest.mark.timeout(900)]

STUDY_ID = (
    "import json; from annotation.demo import DEMO_STUDY_NAME; "
    "from annotation.models import RatingStudy; "
    "print(json.dumps(RatingStudy.objects.get(name=DEMO_STUDY_NAME).pk))"
)
UPLOAD = "imports/waiting-import.csv"
#: What CI must provide where the PostgreSQL client tools are missing.
_CI = ": the PostgreSQL server CI starts comes with them (postgresql-client)"


def report(env: dict[str, str], *args: str) -> dict:
    return json.loads(manage(env, "agreement_report", "--format", "json", *args))


def without_identity(exported: dict) -> dict:
    """A report export without what differs between two computations of the same numbers:
    its id and the times (of the computation, and of the input status it records)."""
    results = {k: v for k, v in exported["results"].items() if k != "computed_on"}
    method = {k: v for k, v in exported["method"].items() if k != "created_at"}
    return {"parameters": exported["parameters"], "method": method, "results": results}


def test_backup_then_restore_keeps_every_row_file_and_report_number(tmp_path):
    for tool in ("pg_dump", "pg_restore", "psql"):
        if shutil.which(tool) is None:
            unavailable(f"{tool} is not installed (Debian: postgresql-client)", in_ci_then=_CI)
    server = postgres_server()
    with (
        scratch_database(server, "backup_src") as source_url,
        scratch_database(server, "backup_dst") as target_url,
    ):
        source = production_env(database_url=source_url, data_dir=tmp_path / "source")
        manage(source, "migrate", "--noinput")
        manage(source, "load_demo")
        manage(source, "load_demo_delphi")
        manage(source, "load_demo_jury", "--no-run")
        study = str(django_json(source, STUDY_ID))
        stored = report(source, "--study", study, "--seed", "11", "--resamples", "200")
        uploaded = tmp_path / "source" / "media" / UPLOAD
        uploaded.parent.mkdir(parents=True)
        uploaded.write_bytes(b"case_id,output\n1,\xc3\xa9dema noted\n")
        counts = model_counts(source)
        assert counts["annotation.Rating"] > 0
        assert counts["agreement.ReportSnapshot"] == 1
        assert stored["results"]["cells"]  # the report has numbers to compare

        backup = tmp_path / "backup"
        run(["bash", str(DEPLOY / "backup.sh"), str(backup)], source)
        target = {**source, "DATABASE_URL": target_url, "MEDHELM_DATA_DIR": str(tmp_path / "dst")}
        run(["bash", str(DEPLOY / "restore.sh"), str(backup)], target)

        assert model_counts(target) == counts
        restored_file = tmp_path / "dst" / "media" / UPLOAD
        assert restored_file.read_bytes() == uploaded.read_bytes()
        snapshot = str(stored["report"]["id"])
        assert report(target, "--study", study, "--snapshot", snapshot) == stored
        again = report(target, "--study", study, "--seed", "11", "--resamples", "200")
        assert again["report"]["id"] != stored["report"]["id"]
        assert again["report"]["input_hash"] == stored["report"]["input_hash"]
        assert without_identity(again) == without_identity(stored)
        # and the restored database takes writes: its sequences were restored with it
        assert model_counts(target)["agreement.ReportSnapshot"] == 2


def test_restore_refuses_a_database_that_has_tables_and_changes_nothing(tmp_path):
    for tool in ("pg_dump", "pg_restore", "psql"):
        if shutil.which(tool) is None:
            unavailable(f"{tool} is not installed (Debian: postgresql-client)", in_ci_then=_CI)
    server = postgres_server()
    with scratch_database(server, "backup_busy") as url:
        env = production_env(database_url=url, data_dir=tmp_path / "data")
        manage(env, "migrate", "--noinput")
        backup = tmp_path / "backup"
        run(["bash", str(DEPLOY / "backup.sh"), str(backup)], env)
        before = model_counts(env)
        import subprocess

        done = subprocess.run(
            ["bash", str(DEPLOY / "restore.sh"), str(backup)],
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 2
        assert "restore into an empty one" in done.stderr
        assert model_counts(env) == before
        # a damaged backup is refused before anything is touched
        (backup / "database.dump").write_bytes(b"not a dump")
        done = subprocess.run(
            ["bash", str(DEPLOY / "restore.sh"), str(backup)],
            env={**env, "DATABASE_URL": url + "_missing"},
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 2
        assert "does not match its SHA256SUMS" in done.stderr
