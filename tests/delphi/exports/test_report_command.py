"""manage.py delphi_report: writes the report or an export, with clear errors."""

from __future__ import annotations

import pytest
from django.core.management import CommandError, call_command

from delphi.exports.registry import render_export
from delphi.models import DelphiStudy
from tests.delphi.flow import make_panel_study, run_round


@pytest.mark.django_db
def test_command_writes_the_pdf_and_the_exports(tmp_path, capsys):
    # A small study: the PDF's content is tested above; here only that the file is written.
    built = make_panel_study(n_panelists=3)
    run_round(built, built.round(1), {})
    study = built.study
    target = tmp_path / "report.pdf"
    call_command("delphi_report", str(study.pk), "--format", "pdf", "--output", str(target))
    assert target.read_bytes().startswith(b"%PDF")
    target = tmp_path / "flow.csv"
    call_command("delphi_report", str(study.pk), "--format", "flow.csv", "--output", str(target))
    expected = render_export(study=study, name="flow.csv")[0]
    assert target.read_bytes() == expected
    call_command("delphi_report", str(study.pk), "--format", "checklist")
    out = capsys.readouterr().out
    assert out.startswith("# Reporting checklist") and study.protocol_hash in out


@pytest.mark.django_db
def test_command_errors_are_clear(tmp_path):
    with pytest.raises(CommandError, match="no Delphi study 999999"):
        call_command("delphi_report", "999999", "--format", "html")
    built = make_panel_study(n_panelists=2, lock=False)
    with pytest.raises(CommandError, match="needs --output"):
        call_command("delphi_report", str(built.study.pk), "--format", "pdf")
    with pytest.raises(CommandError, match="not locked"):
        call_command(
            "delphi_report",
            str(built.study.pk),
            "--format",
            "protocol.json",
            "--output",
            str(tmp_path / "p.json"),
        )
    assert DelphiStudy.objects.filter(pk=built.study.pk).exists()
