"""manage.py agreement_report: compute a snapshot, or export a stored one."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from agreement import services
from agreement.models import ReportSnapshot


def test_command_computes_and_exports(built, tmp_path, pdf_page_count):
    out = io.StringIO()
    study = built.study.pk
    call_command(
        "agreement_report", study=study, resamples=30, seed=3, stdout=out, stderr=io.StringIO()
    )
    data = json.loads(out.getvalue())
    snap = ReportSnapshot.objects.get(pk=data["report"]["id"])
    assert snap.parameters["seed"] == 3 and snap.parameters["n_resamples"] == 30
    assert data["method"]["seed"] == 3
    target = tmp_path / "report.csv"
    args = ["--study", str(study), "--snapshot", str(snap.pk), "--format", "csv"]
    call_command("agreement_report", *args, "--output", str(target), stderr=io.StringIO())
    assert target.read_text().startswith("report,section,row_group")
    assert ReportSnapshot.objects.count() == 1  # exporting a snapshot computes nothing
    pdf = tmp_path / "report.pdf"
    call_command(
        "agreement_report",
        study=study,
        snapshot=snap.pk,
        format="pdf",
        output=pdf,
        stderr=io.StringIO(),
    )
    assert pdf.read_bytes().startswith(b"%PDF") and pdf_page_count(pdf.read_bytes()) >= 3
    for fmt, write in (("tex", services.export_latex), ("md", services.export_markdown)):
        text = io.StringIO()
        call_command("agreement_report", study=study, snapshot=snap.pk, format=fmt, stdout=text)
        assert text.getvalue() == write(snap)
    with pytest.raises(CommandError, match="--output"):
        call_command("agreement_report", study=study, format="pdf")
    with pytest.raises(CommandError, match="no study"):
        call_command("agreement_report", study=999999)
    with pytest.raises(CommandError, match="no report snapshot"):
        call_command("agreement_report", study=study, snapshot=999999)
    with pytest.raises(CommandError, match="invalid parameters"):
        call_command("agreement_report", study=study, resamples=1, stderr=io.StringIO())
