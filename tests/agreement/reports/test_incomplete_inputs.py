"""Computing a report while judge calls or metrics are incomplete asks for a confirmation,
checked on the server; the report states what it was computed on; the page shows the
machine scores' status now."""

from __future__ import annotations

from django.urls import reverse

from agreement.input_status import input_status
from agreement.models import ReportSnapshot
from jury.models import Judge, JudgeCall, JuryRun

FORM = {"n_resamples": 20, "seed": 2, "confidence": 0.95, "ci_method": "bca", "values": "latest"}


def _pending_call(built) -> None:
    run = JuryRun.objects.create(
        study=built.study,
        prompt_template=JuryRun.objects.filter(study=built.study).first().prompt_template,
    )
    JudgeCall.objects.create(
        run=run,
        judge=Judge.objects.get(name="gpt-judge"),
        item=built.items[0],
        prompt_hash="pending",
        prompt_text="p",
    )


def test_status_counts_done_pending_and_failed_per_judge_and_metric(built):
    _pending_call(built)
    status = input_status(study=built.study)
    gpt = next(j for j in status["judges"] if j["judge"] == "gpt-judge")
    assert (
        gpt["pending"] == 1
        and gpt["failed"]
        == JudgeCall.objects.filter(
            judge__name="gpt-judge", status__in=JudgeCall.FAILED_STATUSES
        ).count()
    )
    assert gpt["total"] == len(built.items)
    assert [m["metric"] for m in status["metrics"]] == ["rouge_l_f1"]
    assert status["incomplete"] and any("gpt-judge" in m for m in status["missing"])


def test_incomplete_inputs_need_a_confirmation_then_the_report_says_so(built, client):
    _pending_call(built)
    client.force_login(built.members.coordinator)
    url = reverse("agreement:reports", args=[built.study.pk])
    refused = client.post(url, FORM)
    assert refused.status_code == 200 and not ReportSnapshot.objects.exists()
    assert b"incomplete" in refused.content and b"gpt-judge" in refused.content
    assert b'data-testid="input-status"' in refused.content
    done = client.post(url, {**FORM, "confirm_incomplete": "on"})
    snap = ReportSnapshot.objects.get()
    assert done.status_code == 302
    assert snap.results["computed_on"]["incomplete"] is True
    assert "confirm_incomplete" not in snap.parameters
    page = client.get(reverse("agreement:report", args=[built.study.pk, snap.pk]))
    assert b"incomplete when computed" in page.content
    assert b'data-testid="status-panel"' in page.content
    # the panel's content is read after the stored page opened, from its own address
    status_url = reverse("agreement:machine-status", args=[built.study.pk, snap.pk])
    assert status_url.encode() in page.content
    panel = client.get(status_url)
    assert panel.status_code == 200 and b'data-testid="input-status"' in panel.content
    assert b"gpt-judge" in panel.content and b"Incomplete:" in panel.content
    assert reverse("jury:runs", args=[built.study.pk]).encode() in page.content
    recompute = reverse("agreement:recompute", args=[built.study.pk, snap.pk])
    client.post(recompute)
    assert ReportSnapshot.objects.count() == 1
    client.post(recompute, {"confirm_incomplete": "1"})
    assert ReportSnapshot.objects.count() == 2


def test_complete_inputs_compute_without_a_question(built, client):
    assert not input_status(study=built.study)["incomplete"]  # every judge and metric done
    client.force_login(built.members.coordinator)
    response = client.post(reverse("agreement:reports", args=[built.study.pk]), FORM)
    assert response.status_code == 302
    snap = ReportSnapshot.objects.get()
    assert snap.results["computed_on"]["incomplete"] is False
    page = client.get(reverse("agreement:report", args=[built.study.pk, snap.pk]))
    assert b"complete when computed" in page.content


def test_the_api_asks_for_the_same_confirmation_and_reports_the_status(built, api_as):
    _pending_call(built)
    api = api_as(built.members.coordinator)
    url = f"/api/studies/{built.study.pk}/agreement/reports/"
    refused = api.post(url, FORM, format="json")
    assert refused.status_code == 400 and not ReportSnapshot.objects.exists()
    (message,) = refused.json()["confirm_incomplete"]
    assert "gpt-judge" in message and '"confirm_incomplete": true' in message
    accepted = api.post(url, {**FORM, "confirm_incomplete": True}, format="json")
    assert accepted.status_code == 202
    assert accepted.json()["input_status"]["incomplete"] is True
    snap = ReportSnapshot.objects.get()
    assert "confirm_incomplete" not in snap.parameters
    recompute = f"/api/studies/{built.study.pk}/agreement/reports/{snap.pk}/recompute/"
    assert api.post(recompute, {}, format="json").status_code == 400
    assert ReportSnapshot.objects.count() == 1
    again = api.post(recompute, {"confirm_incomplete": True}, format="json")
    assert again.status_code == 202 and ReportSnapshot.objects.count() == 2
