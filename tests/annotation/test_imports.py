"""Item imports end to end (annotation/imports.py, the run_import task, import_items)."""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path

import pytest
from celery import current_app
from django.core.exceptions import PermissionDenied, ValidationError
from django.core.management import CommandError, call_command
from django.utils import timezone

from annotation import imports, services
from annotation.models import AuditEvent, ImportJob, Item, StudyMembership
from delphi.services import create_taxonomy_version
from tests.factories import MEDHELM_CRITERIA, UserFactory, item_rows

DATA = Path(__file__).parent / "data"
HELM_RUN = DATA / "helm_run" / "medi_qa"


@pytest.fixture(autouse=True)
def media_root(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    return settings.MEDIA_ROOT


@pytest.fixture
def taxonomy(db):
    return create_taxonomy_version(
        tree={
            "name": "Test taxonomy",
            "categories": [
                {
                    "name": "Clinical Decision Support",
                    "subcategories": [
                        {"name": "Planning Treatments", "tasks": ["Treatment planning QA"]}
                    ],
                }
            ],
        },
        source="manual",
    )


@pytest.fixture
def coordinator(db):
    return UserFactory()


@pytest.fixture
def study(coordinator, taxonomy):
    return services.create_study(
        name="Import study",
        created_by=coordinator,
        criteria=MEDHELM_CRITERIA,
        taxonomy_version=taxonomy,
    )


def node(taxonomy, name):
    return taxonomy.nodes.get(name=name)


def start(study, actor, data: bytes, file_format="jsonl", name="items.jsonl", **kwargs):
    return imports.start_import(
        study=study,
        uploaded_name=name,
        content=data,
        file_format=file_format,
        actor=actor,
        **kwargs,
    )


def jsonl(*objects) -> bytes:
    return "\n".join(o if isinstance(o, str) else json.dumps(o) for o in objects).encode()


def item_state(item: Item) -> tuple:
    return (
        item.external_id,
        item.model_name,
        item.input_text,
        item.output_text,
        item.reference_text,
        item.benchmark,
        item.taxonomy_node_id,
        item.metadata,
    )


# --- each format -----------------------------------------------------------------------------


def test_jsonl_import_saves_every_field(study, coordinator, taxonomy, media_root):
    job = start(study, coordinator, (DATA / "items.jsonl").read_bytes())

    assert job.status == ImportJob.Status.SUCCEEDED
    assert (job.total_rows, job.processed_rows, job.created_items, job.unchanged_items) == (
        3,
        3,
        3,
        0,
    )
    assert job.finished_at is not None
    items = {i.external_id: i for i in Item.objects.filter(study=study)}
    assert item_state(items["case-001"]) == (
        "case-001",
        "model-a",
        "A 54-year-old man with chest pain.\nWhat next?",
        "Order an ECG and troponin.",
        "ECG within 10 minutes, serial troponins.",
        "medcalc",
        node(taxonomy, "Treatment planning QA").pk,
        {"source": "ward 3", "difficulty": 2},
    )
    assert item_state(items["2"]) == (
        "2",
        "model-b",
        "Dose of amoxicillin for otitis media in a child?",
        "",
        "",
        "",
        None,
        {},
    )
    assert item_state(items["case-003"])[2:4] == ("  Keep my spaces  ", "Ünïcödé answer ✓")
    # A subcategory name files the item under the subcategory.
    assert items["case-003"].taxonomy_node_id == node(taxonomy, "Planning Treatments").pk
    # The upload is kept under MEDIA_ROOT/imports/ (no temp file left behind).
    stored = media_root / job.source_path
    assert stored.read_bytes() == (DATA / "items.jsonl").read_bytes()
    assert [p.name for p in stored.parent.iterdir()] == [stored.name]
    assert job.source_path.startswith("imports/") and job.source_path.endswith(".jsonl")
    # The empty output of line 3 is a warning, not an error.
    progress = imports.import_progress(job)
    assert progress["errors"] == [] and progress["error_count"] == 0
    assert progress["warnings"] == [
        {
            "where": "line 3",
            "reason": "empty output (imported: a model that answered nothing is still rated)",
        }
    ]
    actions = list(AuditEvent.objects.filter(study=study).values_list("action", "after"))
    assert ("items.import", {"created": 3, "unchanged": 0}) in actions
    assert any(
        a == "import.start" and after["source_name"] == "items.jsonl" for a, after in actions
    )


def test_csv_import_saves_every_field(study, coordinator, taxonomy):
    job = start(study, coordinator, (DATA / "items.csv").read_bytes(), "csv", "items.csv")

    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    items = {i.external_id: i for i in Item.objects.filter(study=study)}
    assert item_state(items["case-101"]) == (
        "case-101",
        "model-a",
        "Line one\r\nline two, with a comma",
        "Answer 1",
        "Ref 1",
        "medi_qa",
        node(taxonomy, "Treatment planning QA").pk,
        {"arm": "B", "site": "Boston", "author": "dr_x"},
    )
    assert item_state(items["case-102"]) == (
        "case-102",
        "model-b",
        "Short input",
        'Answer with "quotes"',
        "",
        "",
        None,
        {},
    )


def test_helm_run_import_saves_every_field(study, coordinator):
    from annotation.importers import pack_helm_run

    job = start(study, coordinator, pack_helm_run(HELM_RUN), "helm", "medi_qa:model=demo.zip")

    assert job.status == ImportJob.Status.SUCCEEDED, job.errors
    assert job.source_path.endswith(".zip")
    states = json.loads((HELM_RUN / "scenario_state.json").read_text())["request_states"]
    items = list(Item.objects.filter(study=study).order_by("external_id"))
    assert len(items) == len(states) == 4
    for item, state in zip(items, states, strict=True):
        assert item_state(item) == (
            f"medi_qa/{state['instance']['id']}",
            "demo_vendor/demo-model-7b",
            state["instance"]["input"]["text"],
            state["result"]["completions"][0]["text"],
            state["instance"]["references"][0]["output"]["text"],
            "medi_qa",
            None,
            {
                "helm_instance_id": state["instance"]["id"],
                "helm_run": "medi_qa:model=demo_vendor_demo-model-7b",
                "split": "test",
            },
        )
    assert items[3].output_text == ""  # the empty completion is still an item
    assert imports.import_progress(job)["warnings"] == [
        {
            "where": "request_states[3]",
            "reason": "empty completion (imported: a model that answered nothing is still rated)",
        }
    ]


# --- bad files -------------------------------------------------------------------------------


BAD_JSONL = b"\n".join(
    [
        jsonl({"external_id": "new-1", "model": "m", "input": "q", "output": "a"}),
        jsonl({"external_id": "new-2", "model": "m", "input": "q"}),
        b'{"external_id": "new-3", "model": "m"',
        jsonl({"external_id": "new-4", "model": "m", "input": "q", "output": "a", "task": "Nope"}),
        jsonl({"external_id": "new-1", "model": "m", "input": "q", "output": "b"}),
        jsonl({"external_id": "new-6", "model": "m", "input": "q", "output": "a", "metadata": 5}),
        b'{"external_id": "new-7", "model": "m", "input": "caf\xe9", "output": "a"}',
        jsonl({"external_id": "new-8", "model": "m", "input": "q", "output": "fine"}),
    ]
)
BAD_JSONL_ERRORS = [
    {"where": "line 2", "reason": "missing required field 'output'"},
    {"where": "line 3", "reason": "not valid JSON: Expecting ',' delimiter (column 38)"},
    {
        "where": "line 4",
        "reason": "unknown task 'Nope': not a node of the study's taxonomy version",
    },
    {
        "where": "line 5",
        "reason": "external_id 'new-1' with model 'm' appears twice in this file (first at line 1)",
    },
    {"where": "line 6", "reason": "metadata must be a JSON object, got a number"},
    {
        "where": "line 7",
        "reason": "not valid UTF-8 (byte 0xe9 at byte offset 446 of the file); "
        "save the file as UTF-8",
    },
]


def test_bad_rows_are_all_reported_and_nothing_is_saved(study, coordinator):
    services.create_items(study=study, rows=item_rows(3, prefix="old"), actor=coordinator)
    before = {i.pk: item_state(i) for i in Item.objects.filter(study=study)}
    assert BAD_JSONL.index(b"\xe9") == 446

    job = start(study, coordinator, BAD_JSONL)

    assert job.status == ImportJob.Status.FAILED
    assert job.errors == BAD_JSONL_ERRORS
    assert (job.created_items, job.unchanged_items, job.total_rows) == (0, 0, 8)
    # Nothing saved, not even the good lines 1 and 8; the old items are untouched.
    assert {i.pk: item_state(i) for i in Item.objects.filter(study=study)} == before
    assert not AuditEvent.objects.filter(study=study, action="items.import", actor=None).exists()
    progress = imports.import_progress(job)
    assert progress["status"] == "failed" and progress["error_count"] == 6
    assert progress["errors"] == BAD_JSONL_ERRORS


def test_a_name_shared_by_a_task_and_its_subcategory_means_the_task(coordinator):
    version = create_taxonomy_version(
        tree={
            "name": "Shared names",
            "categories": [
                {"name": "Same", "subcategories": [{"name": "Same", "tasks": ["Same"]}]}
            ],
        },
        source="manual",
    )
    study = services.create_study(
        name="Shared", created_by=coordinator, criteria=MEDHELM_CRITERIA, taxonomy_version=version
    )
    assert imports.task_names_for(study=study) == {"Same": version.nodes.get(kind="task").pk}


def test_task_in_a_study_without_taxonomy_is_an_error(coordinator):
    study = services.create_study(
        name="No taxonomy", created_by=coordinator, criteria=MEDHELM_CRITERIA
    )
    job = start(
        study,
        coordinator,
        jsonl(
            {"id": "x", "model": "m", "input": "q", "output": "a", "task": "Planning Treatments"}
        ),
    )
    assert job.errors == [
        {
            "where": "line 1",
            "reason": "task 'Planning Treatments' given, but the study has no taxonomy version",
        }
    ]
    assert not Item.objects.filter(study=study).exists()


def test_stored_errors_are_capped_with_a_count_of_the_rest(study, coordinator):
    job = start(study, coordinator, b"\n".join([b"[]"] * 250))

    assert job.status == ImportJob.Status.FAILED
    assert len(job.errors) == imports.MAX_STORED_ERRORS + 1
    assert job.errors[-1] == {"where": "...", "reason": "and 50 more errors", "more": 50}
    progress = imports.import_progress(job)
    assert progress["error_count"] == 250
    assert len(progress["errors"]) == 50
    assert progress["errors"][0] == {
        "where": "line 1",
        "reason": "expected a JSON object, got a list",
    }


# --- idempotence -----------------------------------------------------------------------------


def test_importing_the_same_file_twice_changes_nothing(study, coordinator):
    data = (DATA / "items.jsonl").read_bytes()
    first = start(study, coordinator, data)
    before = {i.pk: item_state(i) for i in Item.objects.filter(study=study)}

    second = start(study, coordinator, data)

    assert (first.created_items, first.unchanged_items) == (3, 0)
    assert second.status == ImportJob.Status.SUCCEEDED
    assert (second.created_items, second.unchanged_items) == (0, 3)
    assert {i.pk: item_state(i) for i in Item.objects.filter(study=study)} == before
    assert AuditEvent.objects.filter(study=study, action="items.import").count() == 1


def test_a_known_item_with_a_different_text_is_an_error_not_unchanged(study, coordinator):
    start(study, coordinator, jsonl({"id": "a", "model": "m", "input": "q", "output": "old"}))

    job = start(
        study,
        coordinator,
        jsonl(
            {"id": "b", "model": "m", "input": "q", "output": "x"},
            {"id": "a", "model": "m", "input": "q", "output": "new"},
        ),
    )

    assert job.errors == [
        {
            "where": "line 2",
            "reason": "external_id 'a' with model 'm' is already in this study with a different "
            "output; an import never changes an existing item",
        }
    ]
    assert list(Item.objects.filter(study=study).values_list("external_id", "output_text")) == [
        ("a", "old")
    ]


def test_run_import_job_twice_imports_once(study, coordinator):
    job = start(study, coordinator, (DATA / "items.jsonl").read_bytes(), background=False)
    assert Item.objects.filter(study=study).count() == 3

    again = imports.run_import_job(job_id=job.pk)

    assert again.pk == job.pk and again.status == ImportJob.Status.SUCCEEDED
    assert (again.created_items, again.finished_at) == (3, job.finished_at)
    assert Item.objects.filter(study=study).count() == 3
    assert AuditEvent.objects.filter(study=study, action="items.import").count() == 1


def test_a_job_left_running_by_a_dead_worker_starts_again(study, coordinator, monkeypatch):
    dispatched = []
    monkeypatch.setattr(imports, "_dispatch", dispatched.append)
    job = start(study, coordinator, (DATA / "items.jsonl").read_bytes(), background=True)
    ImportJob.objects.filter(pk=job.pk).update(
        status=ImportJob.Status.RUNNING, processed_rows=2, total_rows=3
    )

    done = imports.run_import_job(job_id=job.pk)

    assert done.status == ImportJob.Status.SUCCEEDED
    assert (done.created_items, done.processed_rows, done.total_rows) == (3, 3, 3)


def test_an_unexpected_error_fails_the_job_and_is_raised(study, coordinator, monkeypatch):
    def broken(**kwargs):
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(imports, "create_items", broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        start(study, coordinator, (DATA / "items.jsonl").read_bytes())

    job = ImportJob.objects.get(study=study)
    assert job.status == ImportJob.Status.FAILED
    assert job.errors == [
        {"where": "import", "reason": "unexpected error: RuntimeError('disk on fire')"}
    ]
    assert not Item.objects.filter(study=study).exists()
    # Finished: running it again returns it as it is.
    assert imports.run_import_job(job_id=job.pk).status == ImportJob.Status.FAILED


def test_the_task_runs_the_job_and_is_safe_to_deliver_again(study, coordinator, monkeypatch):
    from annotation import tasks

    monkeypatch.setattr(imports, "_dispatch", lambda job_id: None)
    job = start(study, coordinator, (DATA / "items.jsonl").read_bytes(), background=True)

    first = tasks.run_import.apply(args=[job.pk])
    second = tasks.run_import.apply(args=[job.pk])

    assert first.result == second.result == {"job": job.pk, "status": "succeeded"}
    assert Item.objects.filter(study=study).count() == 3
    assert tasks.run_import.apply(args=[job.pk + 1000]).result == {
        "job": job.pk + 1000,
        "status": "missing",
    }


def test_the_task_retries_a_database_error_only_while_the_job_is_unfinished(
    study, coordinator, monkeypatch
):
    from django.db import OperationalError

    from annotation import tasks

    monkeypatch.setattr(imports, "_dispatch", lambda job_id: None)
    job = start(study, coordinator, (DATA / "items.jsonl").read_bytes(), background=True)
    calls = []

    def database_down(*, job_id):
        calls.append(job_id)
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(tasks, "run_import_job", database_down)
    assert tasks.run_import.apply(args=[job.pk]).failed()
    assert len(calls) == 1 + tasks.run_import.max_retries  # queued: retried (eagerly here)

    calls.clear()
    ImportJob.objects.filter(pk=job.pk).update(status=ImportJob.Status.FAILED)
    assert tasks.run_import.apply(args=[job.pk]).failed()
    assert len(calls) == 1  # a recorded failure is final


# --- who may import, and when ----------------------------------------------------------------


def test_a_locked_study_refuses_imports(study, coordinator):
    study.locked_at = timezone.now()
    study.save(update_fields=["locked_at"])

    with pytest.raises(ValidationError) as exc:
        start(study, coordinator, (DATA / "items.jsonl").read_bytes())

    assert exc.value.message_dict == {
        "study": ["the study is locked; items can no longer be imported"]
    }
    assert not ImportJob.objects.exists() and not Item.objects.exists()


def test_a_study_locked_while_the_job_waited_fails_the_job(study, coordinator, monkeypatch):
    monkeypatch.setattr(imports, "_dispatch", lambda job_id: None)
    job = start(study, coordinator, (DATA / "items.jsonl").read_bytes(), background=True)
    study.locked_at = timezone.now()
    study.save(update_fields=["locked_at"])

    job = imports.run_import_job(job_id=job.pk)

    assert job.status == ImportJob.Status.FAILED
    assert job.errors == [
        {"where": "study", "reason": "the study is locked; items can no longer be imported"}
    ]
    assert not Item.objects.exists()


def test_only_coordinators_or_staff_may_import(study, coordinator):
    clinician = UserFactory()
    services.add_member(
        study=study, user=clinician, role=StudyMembership.Role.CLINICIAN, actor=coordinator
    )
    with pytest.raises(PermissionDenied, match="only a coordinator of this study"):
        start(study, clinician, (DATA / "items.jsonl").read_bytes())
    staff = UserFactory(is_staff=True)
    assert start(study, staff, (DATA / "items.jsonl").read_bytes()).created_items == 3


def test_empty_upload_and_unknown_format_are_refused(study, coordinator, media_root):
    with pytest.raises(ValidationError, match="the file is empty"):
        start(study, coordinator, b"")
    with pytest.raises(ValidationError, match="unknown format 'xlsx'"):
        start(study, coordinator, b"x", file_format="xlsx")
    assert not ImportJob.objects.exists()
    assert list((media_root / "imports").iterdir()) == []


# --- background path -------------------------------------------------------------------------


def test_large_uploads_are_queued_after_commit(
    study, coordinator, monkeypatch, django_capture_on_commit_callbacks
):
    sent = []
    monkeypatch.setattr("annotation.tasks.run_import.delay", sent.append)
    monkeypatch.setattr(imports, "INLINE_MAX_BYTES", 100)
    data = (DATA / "items.jsonl").read_bytes()
    assert len(data) > 100

    with django_capture_on_commit_callbacks() as callbacks:
        job = start(study, coordinator, data)  # background=None: decided by the size
        assert sent == []  # not before the job is committed, or the worker might not see it
    for callback in callbacks:
        callback()

    assert job.status == ImportJob.Status.QUEUED
    assert sent == [job.pk]
    assert not Item.objects.exists()
    assert imports.import_progress(job)["phase"] == "queued"


def test_progress_is_reported_in_batches(study, coordinator, monkeypatch):
    monkeypatch.setattr(imports, "PROGRESS_EVERY", 2)
    rows = [{"id": f"c{i}", "model": "m", "input": "q", "output": "a"} for i in range(5)]
    seen = []
    start(
        study,
        coordinator,
        jsonl(*rows),
        on_progress=lambda job: seen.append(
            (imports.import_progress(job)["phase"], job.processed_rows, job.total_rows)
        ),
    )
    assert seen == [
        ("checking", 0, 5),
        ("checking", 2, 5),
        ("checking", 4, 5),
        ("saving", 5, 5),
        ("done", 5, 5),
    ]


@contextlib.contextmanager
def celery_app_pointed_at(broker_url: str):
    """Send this process's tasks to `broker_url` (the app read its broker at import time)."""
    app = current_app._get_current_object()
    old = app.conf.broker_url
    app.conf.broker_url = broker_url
    app._pool = None
    app.amqp._producer_pool = None
    try:
        yield app
    finally:
        app.conf.broker_url = old
        app._pool = None
        app.amqp._producer_pool = None


@pytest.mark.celery_worker
@pytest.mark.django_db(transaction=True)
def test_a_queued_import_runs_in_a_real_worker(tmp_path, settings, monkeypatch):
    from tests.support.celery_worker import running_worker

    coordinator = UserFactory()
    study = services.create_study(name="Bg", created_by=coordinator, criteria=MEDHELM_CRITERIA)
    # The worker process finds the upload under MEDHELM_DATA_DIR/media, as this one does.
    settings.MEDIA_ROOT = tmp_path / "media"
    monkeypatch.delenv("CELERY_BROKER_URL", raising=False)
    monkeypatch.delenv("CELERY_RESULT_BACKEND", raising=False)
    broker = f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}"
    backend = f"db+sqlite:///{tmp_path / 'results.sqlite3'}"
    rows = [
        {"id": f"case-{i}", "model": f"m{i % 3}", "input": f"q{i}", "output": f"a{i}"}
        for i in range(3000)
    ]
    log = tmp_path / "worker.log"
    with (
        celery_app_pointed_at(broker),
        running_worker(
            broker_url=broker,
            result_backend=backend,
            log_path=log,
            extra_env={"MEDHELM_DATA_DIR": str(tmp_path)},
        ),
    ):
        job = start(study, coordinator, jsonl(*rows), background=True)
        assert job.status == ImportJob.Status.QUEUED
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            job.refresh_from_db()
            if job.status in imports.FINISHED:
                break
            time.sleep(0.5)
    assert job.status == ImportJob.Status.SUCCEEDED, (job.errors, log.read_text()[-3000:])
    assert (job.total_rows, job.processed_rows) == (3000, 3000)
    assert (job.created_items, job.unchanged_items) == (3000, 0)
    assert Item.objects.filter(study=study).count() == 3000
    assert imports.import_progress(job)["percent"] == 100


# --- management command ----------------------------------------------------------------------


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
