"""Reports computed in the background: a job is queued with its parameters checked and its
seed drawn, a worker computes it writing progress, and it ends with its snapshot and stored
renderings, or failed with the reason; a job whose worker died is failed, never left running.
The worker's own way (a real Celery worker) is in test_background_worker.py and in
tests/e2e/test_report_in_background.py."""

from __future__ import annotations

import copy
import importlib
import json
from dataclasses import dataclass
from datetime import timedelta

import pytest
from django.utils import timezone

from agreement import plots, printing, renderings, services
from agreement.errors import AgreementError
from agreement.models import ReportJob, ReportRendering, ReportSnapshot
from agreement.services import jobs
from agreement.services import renderings as stored_renderings

PARAMS = {"n_resamples": 20, "seed": 3}


@pytest.fixture
def in_background(settings) -> None:
    settings.AGREEMENT_REPORTS_IN_BACKGROUND = True


def test_a_queued_job_has_its_parameters_checked_and_its_seed_drawn_at_once(built, in_background):
    jobs_before, snapshots_before = ReportJob.objects.count(), ReportSnapshot.objects.count()
    with pytest.raises(AgreementError) as exc:
        services.request_report(study=built.study, actor=None, parameters={"n_resamples": 1})
    assert "n_resamples" in exc.value.as_dict()
    assert ReportJob.objects.count() == jobs_before
    job = services.request_report(study=built.study, actor=None, parameters={"n_resamples": 20})
    assert job.status == ReportJob.Status.QUEUED and job.stage == jobs.STAGE_QUEUED
    assert isinstance(job.parameters["seed"], int)
    assert ReportSnapshot.objects.count() == snapshots_before


@dataclass
class FinishedJob:
    job: ReportJob
    progress: list[tuple[str, int, int]]  # (stage, done, total) as the job wrote them
    drawn: list[str]  # the key of each figure drawn while the job ran


@pytest.fixture(scope="module")
def finished_once(module_db, built_once) -> FinishedJob:
    """A job queued and run to its end by the worker's function, with the progress it wrote
    and the figures it drew seen on the way."""
    seen: list[tuple[str, int, int]] = []
    drawn: list[str] = []

    class SeenProgress(jobs._ProgressWriter):
        def __call__(self, stage: str, done: int, total: int) -> None:
            seen.append((stage, done, total))
            super().__call__(stage, done, total)

    # the module (agreement.plots re-exports its function of the same name)
    drawing = importlib.import_module("agreement.plots.figures")
    draw = drawing.figures

    def counted(results):
        out = draw(results)
        drawn.extend(key for key, _title, fig, _note in out if fig is not None)
        return out

    with module_db(), pytest.MonkeyPatch.context() as patch:
        patch.setattr(jobs, "_ProgressWriter", SeenProgress)
        patch.setattr(drawing, "figures", counted)
        job = services.request_report(
            study=built_once.study,
            actor=built_once.members.researcher,
            parameters=PARAMS,
            background=True,
        )
        return FinishedJob(job=services.run_report_job(job.pk), progress=seen, drawn=drawn)


@pytest.fixture
def finished(built, finished_once) -> FinishedJob:
    return copy.deepcopy(finished_once)


def test_a_job_computes_its_report_writing_progress_and_stores_its_renderings(finished):
    stages = [s for s, _, _ in finished.progress]
    assert stages[0] == "reading the scores" and "leaderboard and figure data" in stages
    assert stages[-1] == jobs.STAGE_SAVING
    ended = finished.job
    cells = [(d, t) for s, d, t in finished.progress if s.startswith("bootstrapping")]
    assert cells and cells[-1][0] == cells[-1][1] == len(ended.snapshot.results["cells"])
    assert [d for d, _ in cells] == sorted(d for d, _ in cells)

    assert ended.status == ReportJob.Status.FINISHED and ended.snapshot is not None
    assert ended.cells_done == ended.cells_total == len(ended.snapshot.results["cells"])
    assert ended.resamples_done == ended.cells_total * 20
    assert ended.snapshot.parameters["seed"] == 3 and ended.snapshot.created_by is not None
    kinds = set(
        ReportRendering.objects.filter(snapshot=ended.snapshot).values_list("kind", flat=True)
    )
    figure_files = {
        f"figure:{key}.{fmt}"
        for key in ("scatter", "bland_altman", "forest", "heatmap")
        for fmt in ("svg", "pdf", "png")
    }
    assert kinds == set(services.RENDERINGS) | figure_files
    # delivered again (acks_late): nothing more happens
    assert services.run_report_job(ended.pk).snapshot_id == ended.snapshot_id
    assert ReportSnapshot.objects.count() == 1


def test_a_job_draws_each_figure_once_for_the_page_the_pdf_and_the_files(finished):
    assert finished.job.status == ReportJob.Status.FINISHED
    drawn = finished.drawn
    assert drawn and len(drawn) == len(set(drawn)), drawn  # each figure drawn once
    files = ReportRendering.objects.filter(
        snapshot=finished.job.snapshot, kind__startswith="figure:"
    )
    assert files.count() == 4 * len(plots.FIGURE_FORMATS)


def test_opening_and_downloading_a_stored_report_never_renders_it_again(
    built, finished, client, monkeypatch
):
    snapshot = finished.job.snapshot
    stored = {r.kind: bytes(r.content) for r in ReportRendering.objects.filter(snapshot=snapshot)}

    def must_not_run(*args, **kwargs):
        raise AssertionError("a stored rendering was produced again")

    monkeypatch.setattr(plots, "svg_figures", must_not_run)
    monkeypatch.setattr(printing, "report_pdf", must_not_run)
    monkeypatch.setattr(renderings, "latex_file", must_not_run)
    monkeypatch.setattr(renderings, "markdown_file", must_not_run)
    monkeypatch.setattr(stored_renderings, "render_body", must_not_run)
    monkeypatch.setattr(plots, "figure_files", must_not_run)
    monkeypatch.setattr(plots, "figure_file", must_not_run)
    client.force_login(built.members.researcher)
    base = f"/studies/{built.study.pk}/agreement/{snapshot.pk}/"
    page = client.get(base)
    assert page.status_code == 200 and b"<svg" not in page.content
    assert stored["page"].decode() in page.content.decode()
    # its figures are images of the stored SVG files
    for figure in json.loads(stored["figures"]):
        src = f'src="{base}figures/{figure["key"]}.svg"'.encode()
        assert (src in page.content) == (figure["svg"] is not None), figure["key"]
    for fmt in ("csv", "json", "pdf", "tex", "md"):
        response = client.get(f"{base}report.{fmt}")
        assert response.status_code == 200 and response.content == stored[fmt]
    assert client.get(f"{base}report.docx").status_code == 404
    # every figure file was stored by the job too, and is served as stored
    for figure in json.loads(stored["figures"]):
        for fmt in plots.FIGURE_FORMATS:
            response = client.get(f"{base}figures/{figure['key']}.{fmt}")
            kept = stored[f"figure:{figure['key']}.{fmt}"]
            if figure["svg"] is None:
                assert response.status_code == 404 and kept == b""
            else:
                assert response.status_code == 200 and response.content == kept
                assert response["Content-Type"] == plots.FIGURE_FORMATS[fmt][0]


def test_a_snapshot_without_stored_renderings_gets_them_on_first_use(built, client):
    snapshot = services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    assert not ReportRendering.objects.filter(snapshot=snapshot).exists()
    client.force_login(built.members.researcher)
    assert client.get(f"/studies/{built.study.pk}/agreement/{snapshot.pk}/").status_code == 200
    pdf = client.get(f"/studies/{built.study.pk}/agreement/{snapshot.pk}/report.pdf")
    assert pdf.content.startswith(b"%PDF")
    kinds = set(ReportRendering.objects.filter(snapshot=snapshot).values_list("kind", flat=True))
    # the PDF read its figures from their SVG files, so those were stored too
    keys = ("scatter", "bland_altman", "forest", "heatmap")
    assert kinds == {"figures", "page", "pdf"} | {f"figure:{key}.svg" for key in keys}
    # a download format is drawn and stored on its first download, with the others
    png = client.get(f"/studies/{built.study.pk}/agreement/{snapshot.pk}/figures/heatmap.png")
    assert png.status_code == 200 and png.content.startswith(b"\x89PNG")
    kinds = set(ReportRendering.objects.filter(snapshot=snapshot).values_list("kind", flat=True))
    assert kinds >= {f"figure:{key}.{fmt}" for key in keys for fmt in plots.FIGURE_FORMATS}


def test_a_job_that_cannot_be_computed_fails_with_the_reason(built, monkeypatch):
    job = services.request_report(study=built.study, actor=None, parameters=PARAMS, background=True)

    def refuse(**kwargs):
        raise AgreementError("the study has no clinician ratings yet", field="study")

    monkeypatch.setattr(jobs, "create_snapshot", refuse)
    ended = services.run_report_job(job.pk)
    assert ended.status == ReportJob.Status.FAILED and ended.finished_at is not None
    assert ended.error == "the report could not be computed: the study has no clinician ratings yet"


def test_an_unexpected_error_fails_the_job_with_its_type_and_is_raised(built, monkeypatch):
    job = services.request_report(study=built.study, actor=None, parameters=PARAMS, background=True)

    def broken(**kwargs):
        raise MemoryError("out of memory in the bootstrap")

    monkeypatch.setattr(jobs, "create_snapshot", broken)
    with pytest.raises(MemoryError):
        services.run_report_job(job.pk)
    job.refresh_from_db()
    assert job.status == ReportJob.Status.FAILED
    assert (
        job.error == "unexpected error while computing: MemoryError: out of memory in the bootstrap"
    )


def test_a_job_whose_worker_stopped_is_failed_with_the_reason_and_shown(built, client, settings):
    settings.AGREEMENT_REPORT_STALE_SECONDS = 60
    job = services.request_report(study=built.study, actor=None, parameters=PARAMS, background=True)
    long_ago = timezone.now() - timedelta(seconds=61)
    ReportJob.objects.filter(pk=job.pk).update(
        status=ReportJob.Status.RUNNING, stage="bootstrapping", heartbeat_at=long_ago
    )
    alive = services.request_report(
        study=built.study, actor=None, parameters=PARAMS, background=True
    )
    ReportJob.objects.filter(pk=alive.pk).update(
        status=ReportJob.Status.RUNNING, heartbeat_at=timezone.now()
    )
    client.force_login(built.members.researcher)
    listing = client.get(f"/studies/{built.study.pk}/agreement/").content.decode()
    job.refresh_from_db()
    assert job.status == ReportJob.Status.FAILED
    assert job.error.startswith("the worker computing it stopped answering (last progress ")
    assert "at 'bootstrapping'" in job.error
    assert job.error in listing.replace("&#x27;", "'")
    assert ReportJob.objects.get(pk=alive.pk).status == ReportJob.Status.RUNNING
    # a late delivery of the failed job's task does not revive it
    assert services.run_report_job(job.pk).status == ReportJob.Status.FAILED


def test_the_job_page_and_its_status_follow_the_job(built, client):
    job = services.request_report(study=built.study, actor=None, parameters=PARAMS, background=True)
    client.force_login(built.members.researcher)
    base = f"/studies/{built.study.pk}/agreement/jobs/{job.pk}/"
    page = client.get(base)
    assert page.status_code == 200 and b'data-testid="job-progress"' in page.content
    assert client.get(base + "status.json").json()["status"] == "queued"
    services.run_report_job(job.pk)
    state = client.get(base + "status.json").json()
    job.refresh_from_db()
    assert state["status"] == "finished" and state["snapshot"] == job.snapshot_id
    assert state["report_url"] == f"/studies/{built.study.pk}/agreement/{job.snapshot_id}/"
    assert client.get(base).url == state["report_url"]  # the finished job's page leads there
    other = client.get(f"/studies/{built.study.pk}/agreement/jobs/{job.pk + 99}/")
    assert other.status_code == 404


def test_the_api_answers_202_with_a_status_url_that_follows_the_job(built, api_as):
    api = api_as(built.members.researcher)
    settings_in_background = api.post(
        f"/api/studies/{built.study.pk}/agreement/reports/", PARAMS, format="json"
    )
    # computed in the request by this module's conftest: already finished
    assert settings_in_background.status_code == 202
    queued = services.request_report(
        study=built.study, actor=None, parameters=PARAMS, background=True
    )
    url = f"/api/studies/{built.study.pk}/agreement/jobs/{queued.pk}/"
    state = api.get(url).json()
    assert state["status"] == "queued" and state["report_url"] is None
    assert state["status_url"].endswith(url)
    services.run_report_job(queued.pk)
    state = api.get(url).json()
    assert state["status"] == "finished" and state["percent"] == 100
    assert api.get(state["report_url"]).json()["id"] == state["snapshot"]


def test_a_job_in_several_processes_stores_what_one_process_stores(built, finished, settings):
    """The rows' cells and the figures' download files computed in other processes
    (agreement.processes) are those of one process, byte for byte."""
    settings.AGREEMENT_REPORT_PROCESSES = 2
    job = services.request_report(
        study=built.study, actor=built.members.researcher, parameters=PARAMS, background=True
    )
    job = services.run_report_job(job.pk)
    assert job.status == ReportJob.Status.FINISHED, job.error
    one, several = finished.job.snapshot, job.snapshot
    assert several.results["cells"] == one.results["cells"]
    assert several.results["differences"] == one.results["differences"]

    def files(snapshot) -> dict[str, bytes]:
        stored = ReportRendering.objects.filter(snapshot=snapshot, kind__startswith="figure:")
        return {r.kind: bytes(r.content) for r in stored}

    assert files(several) == files(one)
    assert len(files(several)) == 4 * len(plots.FIGURE_FORMATS)
