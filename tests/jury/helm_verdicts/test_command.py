"""manage.py import_helm_verdicts, and the report it prints."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from annotation.models import AuditEvent
from jury.helm_verdicts import HelmVerdictReport, import_helm_verdicts
from tests.factories import UserFactory
from tests.jury.helm_verdicts.factories import HELM_RUN, edit, import_items, run_copy


def test_command_imports_a_run_directory(study, coordinator, capsys):
    import_items(study, coordinator)
    researcher = UserFactory()

    call_command(
        "import_helm_verdicts", "--study", str(study.pk), "--as", researcher.username, str(HELM_RUN)
    )

    out = capsys.readouterr().out
    assert "27 scores created, 0 unchanged, 0 invalid" in out
    assert "helm:claude, helm:gpt, helm:llama" in out
    assert AuditEvent.objects.get(action="jury.helm_import").actor == researcher


def test_command_lists_conflicts_and_fails(study, coordinator, tmp_path, capsys):
    import_items(study, coordinator)
    import_helm_verdicts(study=study, source=HELM_RUN, actor=coordinator)
    changed = run_copy(tmp_path, edit(1, "llama", "clarity", score=1))

    with pytest.raises(CommandError, match="1 problem; nothing was saved"):
        call_command("import_helm_verdicts", "--study", str(study.pk), str(changed))

    err = capsys.readouterr().err
    assert "request_states[1].annotations.medi_qa.llama.clarity: helm:llama's clarity" in err


def test_command_refuses_an_unknown_study_or_path(study, tmp_path):
    with pytest.raises(CommandError, match="no rating study"):
        call_command("import_helm_verdicts", "--study", "999999", str(HELM_RUN))
    with pytest.raises(CommandError, match="does not exist"):
        call_command("import_helm_verdicts", "--study", str(study.pk), str(tmp_path / "nope"))


def test_report_as_dict_is_json_ready(study, coordinator):
    import_items(study, coordinator)
    report = import_helm_verdicts(study=study, source=HELM_RUN, actor=coordinator)

    assert isinstance(report, HelmVerdictReport)
    assert json.loads(json.dumps(report.as_dict()))["scores_created"] == 27
