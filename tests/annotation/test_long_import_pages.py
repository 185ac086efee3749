"""The coordinator's pages that import ratings and scores from long files, the long exports,
and the `import_ratings` / `import_scores` commands."""

from __future__ import annotations

import csv
import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command

from annotation.imports.longmarks import MARK_COLUMNS
from annotation.models import AuditEvent, ImportedRating
from jury.models import JudgeScore, MetricScore
from tests.factories import make_study_with_members

RATINGS = (
    "external_id,model,rater,criterion,value,comment\n"
    "case-0000,model-a,ext-1,accuracy,4,\n"
    "case-0001,model-a,ext-2,clarity,3,short\n"
)
SCORES = (
    "external_id,model,kind,scorer,criterion,value,comment\n"
    "case-0000,model-a,judge,outside-judge,accuracy,4,\n"
    "case-0000,model-a,metric,bleu,,0.4,\n"
)


@pytest.fixture
def built(db):
    return make_study_with_members(n_items=4)


def _post(client, url: str, text: str, name: str):
    upload = SimpleUploadedFile(name, text.encode(), content_type="text/csv")
    return client.post(url, {"file": upload})


def _pages(study_id: int) -> dict[str, str]:
    return {
        "ratings": f"/studies/{study_id}/import/ratings/",
        "scores": f"/studies/{study_id}/jury/import/scores/",
    }


def test_coordinator_imports_ratings_and_sees_a_summary(built, client):
    client.force_login(built.coordinator)
    url = _pages(built.study.pk)["ratings"]
    page = client.get(url)
    assert page.status_code == 200 and b"Import ratings" in page.content
    response = _post(client, url, RATINGS, "ratings.csv")
    assert response.status_code == 200
    summary = response.content.decode()
    assert 'data-testid="long-import-summary"' in summary
    assert "<strong>2</strong> ratings created" in summary and "ext-1, ext-2" in summary
    assert ImportedRating.objects.filter(study=built.study).count() == 2
    assert AuditEvent.objects.get(action="ratings.import").actor == built.coordinator


def test_a_bad_file_lists_every_problem_and_imports_nothing(built, client):
    client.force_login(built.coordinator)
    bad = RATINGS + "case-0002,model-a,ext-1,accuracy,9,\ncase-0099,model-a,ext-1,clarity,2,\n"
    response = _post(client, _pages(built.study.pk)["ratings"], bad, "ratings.csv")
    assert response.status_code == 400
    body = response.content.decode()
    assert "Nothing was imported: 2 problems" in body
    assert "<td>4</td><td>value</td><td>9 is outside the scale of accuracy (1 to 5)</td>" in body
    assert "<td>5</td><td>external_id</td>" in body
    assert not ImportedRating.objects.exists()


def test_coordinator_imports_scores_as_jsonl_detected_from_content(built, client):
    client.force_login(built.coordinator)
    jsonl = (
        '{"external_id": "case-0001", "model": "model-a", "kind": "metric", '
        '"scorer": "medcon", "value": 0.5}\n'
    )
    response = _post(client, _pages(built.study.pk)["scores"], jsonl, "upload")
    assert response.status_code == 200, response.content.decode()
    assert "(JSONL)" in response.content.decode()
    assert MetricScore.objects.get().metric == "medcon"


def test_only_coordinators_import(built, client):
    for user in (built.researcher, built.clinicians[0]):
        client.force_login(user)
        for url in _pages(built.study.pk).values():
            assert _post(client, url, RATINGS, "r.csv").status_code == 403
    client.force_login(built.outsider)
    for url in _pages(built.study.pk).values():
        assert client.get(url).status_code == 404
    assert not ImportedRating.objects.exists()


def test_the_dashboard_links_the_imports_and_long_exports(built, client):
    client.force_login(built.coordinator)
    body = client.get(f"/studies/{built.study.pk}/").content.decode()
    for url in (
        *_pages(built.study.pk).values(),
        f"/studies/{built.study.pk}/export/ratings-long.csv",
        f"/studies/{built.study.pk}/jury/export/scores-long.csv",
    ):
        assert f'href="{url}"' in body, url


def test_long_exports_read_back_by_the_imports(built, client):
    client.force_login(built.coordinator)
    _post(client, _pages(built.study.pk)["ratings"], RATINGS, "ratings.csv")
    _post(client, _pages(built.study.pk)["scores"], SCORES, "scores.csv")
    client.force_login(built.researcher)
    for url, expected in (
        (f"/studies/{built.study.pk}/export/ratings-long.csv", RATINGS),
        (f"/studies/{built.study.pk}/jury/export/scores-long.csv", SCORES),
    ):
        response = client.get(url)
        assert response.status_code == 200 and response["Content-Type"].startswith("text/csv")
        body = b"".join(response.streaming_content).decode()
        rows = list(csv.reader(io.StringIO(body)))
        wanted = list(csv.reader(io.StringIO(expected)))
        if "scores" in url:  # a metric is written on the criterion "overall"
            wanted[2][4] = "overall"
        else:  # the ratings export marks each row: neither a check nor a calibration item
            wanted = [wanted[0] + list(MARK_COLUMNS)] + [
                [*row, "False", "", "", "False", ""] for row in wanted[1:]
            ]
        assert rows == wanted, url


def test_commands_import_and_report_every_bad_line(built, tmp_path, capsys):
    ratings, scores = tmp_path / "ratings.csv", tmp_path / "scores.jsonl"
    ratings.write_text(RATINGS)
    scores.write_text(
        '{"external_id": "case-0000", "model": "model-a", "kind": "judge", "scorer": "j", '
        '"criterion": "accuracy", "value": 3}\n'
    )
    call_command("import_ratings", "--study", str(built.study.pk), str(ratings))
    call_command("import_scores", "--study", str(built.study.pk), str(scores))
    out = capsys.readouterr().out
    assert "2 lines (csv): 2 ratings created, 0 unchanged; new: ext-1, ext-2" in out
    assert "1 lines (jsonl): 1 scores created, 0 unchanged; new: j" in out
    assert JudgeScore.objects.get().value == 3
    call_command("import_ratings", "--study", str(built.study.pk), str(ratings))
    assert "0 ratings created, 2 unchanged" in capsys.readouterr().out

    bad = tmp_path / "bad.csv"
    bad.write_text(RATINGS.replace(",4,", ",x,").replace(",3,short", ",7,short"))
    with pytest.raises(CommandError, match="2 problem"):
        call_command("import_ratings", "--study", str(built.study.pk), str(bad))
    err = capsys.readouterr().err
    assert "line 2, column value: 'x' is not a number" in err
    assert "line 3, column value:" in err
    with pytest.raises(CommandError, match="neither a coordinator"):
        call_command(
            "import_ratings",
            "--study",
            str(built.study.pk),
            "--as",
            built.researcher.username,
            str(ratings),
        )


def test_imported_raters_show_as_imported_and_not_in_the_progress(built, client):
    client.force_login(built.coordinator)
    _post(client, _pages(built.study.pk)["ratings"], RATINGS, "ratings.csv")
    members = client.get(f"/studies/{built.study.pk}/members/").content.decode()
    assert members.count("imported (ratings from a file; no login)") == 2
    dashboard = client.get(f"/studies/{built.study.pk}/")
    progress = [c.pseudonym for c in dashboard.context["clinicians"]]
    assert progress and "ext-1" not in progress and "ext-2" not in progress
