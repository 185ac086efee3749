"""The study archive: a study with ratings, attention checks, calibration items and the
raters' calibration completions, jury verdicts, metric scores, a report and audit rows,
exported to one file and imported after the original is deleted, gives the same agreement
report and the same check and calibration rows; a version-1 archive (from before checks and
calibration) still imports; the file names nobody; a damaged, foreign or conflicting file is refused
whole with a message, and nothing is written."""

from __future__ import annotations

import io
import json
import zipfile

import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command
from django.utils import timezone

from agreement.archive import ArchiveError, import_study, read_archive, study_archive
from agreement.models import ReportSnapshot
from agreement.services import normalise_parameters
from agreement.services.computing import compute_report
from annotation import audit
from annotation import services as annotation_services
from annotation.models import (
    Assignment,
    AttentionCheck,
    AuditEvent,
    CalibrationCompletion,
    CalibrationItem,
    ImportedRating,
    Item,
    Rating,
    RatingStudy,
)
from annotation.selectors import LONG_RATING_COLUMNS, ratings_long_rows
from jury.models import Judge, JudgeCall, JudgeScore, MetricScore
from medhelm_site.common.csv_export import csv_text
from tests.agreement.factories import build_study

pytestmark = pytest.mark.django_db

PARAMETERS = normalise_parameters({"n_resamples": 60, "seed": 11})
REPORT_KEYS = ("rows", "columns", "criteria", "cells", "differences", "sensitivity")
PLANTED = ("attention_checks.jsonl", "calibration_items.jsonl", "calibration_completions.jsonl")


def _plant(built) -> None:
    """An attention check and a calibration item on two items every rater of them submitted
    (their ratings leave the statistics), and the completions of the raters who rated the
    calibration item, with the agreement they were shown."""
    study, coordinator = built.study, built.members.coordinator
    unfinished = Assignment.objects.filter(study=study).exclude(status="submitted")
    rated = (
        Item.objects.filter(study=study, assignments__status="submitted")
        .exclude(assignments__in=unfinished)
        .distinct()
        .order_by("pk")
    )
    check_item, calibration_item = rated[0], rated[1]
    annotation_services.mark_attention_check(
        study=study,
        item_id=check_item.pk,
        expected={"accuracy": (4, None)},
        note="Plainly wrong dose.",
        actor=coordinator,
    )
    # Marked by hand: the service refuses an item already rated as an ordinary one.
    calibration = CalibrationItem.objects.create(
        study=study,
        item=calibration_item,
        reference={"accuracy": 4, "completeness": 3},
        note=f"Agreed with {built.members.clinicians[0].username} on the ward round.",
        set_by=coordinator,
        set_at=timezone.now(),
    )
    audit.record(
        actor=coordinator,
        action="calibration.mark",
        target=calibration,
        study=study,
        after={"item": calibration_item.pk, "reference": calibration.reference},
    )
    raters = calibration_item.assignments.values_list("clinician", flat=True)
    for rater in get_user_model().objects.filter(pk__in=raters):
        annotation_services.advance_calibration(study=study, clinician=rater)


@pytest.fixture
def built():
    built = build_study(n_items=10, n_clinicians=4, leave_pending=1)
    # Ratings collected elsewhere, by a rater without an account here.
    by_item = {
        (row["external_id"], row["model"]): {**row, "rater": "EXT1"}
        for row in ratings_long_rows(study=built.study)
        if row["criterion"] == "accuracy"
    }
    rows = list(by_item.values())[:4]
    annotation_services.import_ratings(
        study=built.study,
        data=csv_text(LONG_RATING_COLUMNS, rows).encode(),
        name="elsewhere.csv",
        actor=built.members.coordinator,
    )
    results, method, input_hash = compute_report(
        study=built.study, parameters=normalise_parameters({"n_resamples": 20, "seed": 3})
    )
    ReportSnapshot.objects.create(
        study=built.study,
        parameters={"n_resamples": 20, "seed": 3},
        results=results,
        method=method,
        input_hash=input_hash,
        created_by=built.members.researcher,
    )
    # An audit row that quotes a username and an address (as an account unlock does).
    rater = built.members.clinicians[0]
    audit.record(
        actor=built.members.coordinator,
        action="account.unlock",
        target=rater,
        study=built.study,
        before={"username": rater.username, "note": f"mail {rater.email} about it"},
    )
    _plant(built)
    return built


def _counts(study: RatingStudy) -> dict[str, int]:
    return {
        "items": Item.objects.filter(study=study).count(),
        "ratings": Rating.objects.filter(assignment__study=study).count(),
        "imported": ImportedRating.objects.filter(study=study).count(),
        "calls": JudgeCall.objects.filter(run__study=study).count(),
        "judge_scores": JudgeScore.objects.filter(item__study=study).count(),
        "metrics": MetricScore.objects.filter(item__study=study).count(),
        "snapshots": ReportSnapshot.objects.filter(study=study).count(),
        "audit": AuditEvent.objects.filter(study=study).count(),
        "checks": AttentionCheck.objects.filter(study=study).count(),
        "calibration_items": CalibrationItem.objects.filter(study=study).count(),
        "completions": CalibrationCompletion.objects.filter(study=study).count(),
    }


def _planted_rows(study: RatingStudy) -> dict[str, list]:
    """The check and calibration rows, by the item's external id and the rater's pseudonym."""
    pseudonym = dict(study.memberships.values_list("user_id", "pseudonym"))
    return {
        "checks": [
            (c.item.external_id, c.item.model_name, c.expected, c.note, c.created_at)
            for c in AttentionCheck.objects.filter(study=study).select_related("item")
        ],
        "calibration_items": [
            (c.item.external_id, c.item.model_name, c.reference, c.note, c.set_at, c.created_at)
            for c in CalibrationItem.objects.filter(study=study).select_related("item")
        ],
        "completions": sorted(
            (pseudonym[c.clinician_id], c.completed_at, c.n_items, c.summary)
            for c in CalibrationCompletion.objects.filter(study=study)
        ),
    }


def _delete(study: RatingStudy) -> None:
    """Scores protect the rubric they are on: they go first, then the study with the rest."""
    Rating.objects.filter(assignment__study=study).delete()
    ImportedRating.objects.filter(study=study).delete()
    JudgeScore.objects.filter(item__study=study).delete()
    study.delete()


def test_the_report_is_the_same_after_export_delete_and_import(built):
    original = built.study
    results, method, _hash = compute_report(study=original, parameters=PARAMETERS)
    counts = _counts(original)
    assert all(counts.values()), counts
    planted = _planted_rows(original)
    assert planted["completions"] and planted["completions"][0][3]  # agreement was shown
    # the note names a rater: the archive carries their pseudonym instead
    rater = built.members.clinicians[0]
    label = original.memberships.get(user=rater).pseudonym
    planted["calibration_items"] = [
        (*row[:3], row[3].replace(rater.username, label), *row[4:])
        for row in planted["calibration_items"]
    ]
    assert label in planted["calibration_items"][0][3]
    data = study_archive(study=original)
    _delete(original)
    assert not RatingStudy.objects.filter(pk=original.pk).exists()

    copy = import_study(data=data, actor=None)
    again, method_again, _hash = compute_report(study=copy, parameters=PARAMETERS)
    cells = [c for c in results["cells"] if c["section"] == "overall"]
    assert len(cells) >= 4 and any(c["estimate"] is not None for c in cells)
    for key in REPORT_KEYS:
        assert again[key] == results[key], key
    for key in ("n_items", "attention_checks_excluded", "calibration"):
        assert method_again[key] == method[key], key
    assert method["attention_checks_excluded"] == 1 and method["calibration"]["raters"]
    assert _planted_rows(copy) == planted
    after = _counts(copy)
    assert after == {**counts, "audit": counts["audit"] + 1}  # and the import's own row
    snapshot = ReportSnapshot.objects.get(study=copy)
    assert snapshot.results["cells"]  # the stored report came along
    assert AuditEvent.objects.filter(study=copy, action="study.import").exists()


def test_audit_rows_keep_their_times_and_point_at_the_imported_rows(built):
    original = built.study
    rater = built.members.clinicians[1]
    assignment = original.assignments.filter(clinician=rater).first()
    annotation_services.flag_assignment(
        assignment_id=assignment.pk, clinician=rater, flagged=True, reason="unclear"
    )
    times = list(
        AuditEvent.objects.filter(study=original).order_by("pk").values_list("action", "at")
    )
    copy = import_study(data=study_archive(study=original), actor=None)
    copied = list(
        AuditEvent.objects.filter(study=copy).exclude(action="study.import").order_by("pk")
    )
    assert [(e.action, e.at) for e in copied] == times
    assignment_rows = [e for e in copied if e.target_type == "Assignment"]
    assert assignment_rows
    assert all(copy.assignments.filter(pk=int(e.target_id)).exists() for e in assignment_rows)


def test_the_archive_names_no_account(built):
    data = study_archive(study=built.study)
    users = get_user_model().objects.all()
    secrets_ = {u.username for u in users} | {u.email for u in users if u.email}
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        text = "\n".join(archive.read(name).decode() for name in archive.namelist())
    assert not [s for s in secrets_ if s in text]
    tables = read_archive(data)
    labels = {row["label"] for row in tables["people.jsonl"]}
    assert {"R01", "R02", "R03", "R04"} <= labels


def test_the_manifest_counts_and_hashes_every_member(built):
    data = study_archive(study=built.study)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        manifest = json.loads(archive.read("manifest.json"))
    assert manifest["format_version"] == 2
    assert manifest["members"]["attention_checks.jsonl"]["rows"] == 1
    assert manifest["members"]["calibration_completions.jsonl"]["rows"] == (
        CalibrationCompletion.objects.filter(study=built.study).count()
    )
    assert (
        manifest["members"]["ratings.jsonl"]["rows"]
        == Rating.objects.filter(assignment__study=built.study).count()
    )
    assert len(manifest["members"]["judge_calls.jsonl"]["sha256"]) == 64


def _rewritten(data: bytes, name: str, change) -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for member in source.namelist():
            body = source.read(member)
            target.writestr(member, change(body) if member == name else body)
    return out.getvalue()


def _as_version_1(data: bytes) -> bytes:
    """`data` as a version-1 archive: without the members version 2 added."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for member in source.namelist():
            body = source.read(member)
            if member == "manifest.json":
                manifest = json.loads(body)
                manifest["format_version"] = 1
                for name in PLANTED:
                    del manifest["members"][name]
                body = json.dumps(manifest).encode()
            if member not in PLANTED:
                target.writestr(member, body)
    return out.getvalue()


def test_a_version_1_archive_still_imports_without_checks_or_calibration(built):
    before = _counts(built.study)
    copy = import_study(data=_as_version_1(study_archive(study=built.study)), actor=None)
    after = _counts(copy)
    assert after["checks"] == after["calibration_items"] == after["completions"] == 0
    same = ("items", "ratings", "imported", "calls", "judge_scores", "metrics", "snapshots")
    assert {k: after[k] for k in same} == {k: before[k] for k in same}
    event = AuditEvent.objects.get(study=copy, action="study.import")
    assert event.after["rows"]["attention_checks.jsonl"] == 0


def test_a_version_2_archive_without_a_version_2_member_is_refused(built):
    data, out = study_archive(study=built.study), io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(data)) as source, zipfile.ZipFile(out, "w") as target:
        for member in source.namelist():
            if member != "calibration_items.jsonl":
                target.writestr(member, source.read(member))
    message = _nothing_written(lambda: import_study(data=out.getvalue(), actor=None))
    assert "calibration_items.jsonl is missing" in message


def test_audit_rows_on_checks_and_calibration_point_at_the_imported_rows(built):
    copy = import_study(data=study_archive(study=built.study), actor=None)
    for model in (AttentionCheck, CalibrationItem, CalibrationCompletion):
        events = AuditEvent.objects.filter(study=copy, target_type=model.__name__)
        assert events.exists(), model.__name__
        assert all(model.objects.filter(study=copy, pk=int(e.target_id)) for e in events)


def _nothing_written(action) -> str:
    studies, users = RatingStudy.objects.count(), get_user_model().objects.count()
    with pytest.raises(ArchiveError) as caught:
        action()
    assert RatingStudy.objects.count() == studies
    assert get_user_model().objects.count() == users
    return str(caught.value)


def test_an_unknown_format_version_is_refused(built):
    def bump(body: bytes) -> bytes:
        manifest = json.loads(body)
        manifest["format_version"] = 99
        return json.dumps(manifest).encode()

    data = _rewritten(study_archive(study=built.study), "manifest.json", bump)
    message = _nothing_written(lambda: import_study(data=data, actor=None))
    assert "format version 99" in message


def test_an_edited_member_is_refused_by_its_hash(built):
    data = _rewritten(
        study_archive(study=built.study),
        "ratings.jsonl",
        lambda body: body.replace(b'"value": 5', b'"value": 4', 1),
    )
    message = _nothing_written(lambda: import_study(data=data, actor=None))
    assert "ratings.jsonl does not match its SHA-256" in message


def test_a_file_that_is_not_an_archive_is_refused():
    message = _nothing_written(lambda: import_study(data=b"PK not really", actor=None))
    assert "not a zip archive" in message


def test_a_conflict_found_midway_leaves_nothing_behind(built):
    """The judge conflict is found after the accounts and the study are written: the
    transaction takes them back."""
    data = study_archive(study=built.study)
    Judge.objects.filter(name="gpt-judge").update(model_id="another-model")
    message = _nothing_written(lambda: import_study(data=data, actor=None))
    assert "gpt-judge" in message and "another-model" in message


def test_the_commands_round_trip_and_explain_a_refusal(built, tmp_path):
    path = tmp_path / "study.zip"
    call_command("export_study", study=built.study.pk, output=str(path))
    before = RatingStudy.objects.count()
    out = io.StringIO()
    call_command("import_study", str(path), stdout=out)
    assert RatingStudy.objects.count() == before + 1
    assert "Imported as study" in out.getvalue()
    with pytest.raises(CommandError, match="exists already"):
        call_command("export_study", study=built.study.pk, output=str(path))
    path.write_bytes(_rewritten(path.read_bytes(), "items.jsonl", lambda b: b + b"{}\n"))
    with pytest.raises(CommandError, match=r"items\.jsonl.*nothing was imported"):
        call_command("import_study", str(path))


def test_coordinators_download_the_archive_and_the_download_is_audited(built, client):
    url = f"/studies/{built.study.pk}/agreement/archive.zip"
    for user in (built.members.researcher, built.members.clinicians[0]):
        client.force_login(user)
        assert client.get(url).status_code == 403
    client.force_login(built.members.coordinator)
    dashboard = client.get(f"/studies/{built.study.pk}/").content.decode()
    assert f'href="{url}"' in dashboard
    response = client.get(url)
    assert response.status_code == 200 and response["Content-Type"] == "application/zip"
    assert read_archive(response.content)["study.jsonl"][0]["name"] == built.study.name
    event = AuditEvent.objects.get(study=built.study, action="study.export")
    assert event.actor == built.members.coordinator
    assert event.after["bytes"] == len(response.content)
