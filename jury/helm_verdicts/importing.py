"""import_helm_verdicts: a HELM run's jury verdicts as scores of judges "helm:<judge>"
(provider "imported", call=None) on the study's items made from the same run, so that
HELM's jury can be set beside the study's clinicians without re-running it."""

from __future__ import annotations

from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation.imports import HelmRun, HelmSource, RowError, helm_rows, read_helm_run
from annotation.imports.suite import SuiteZip
from annotation.locking import lock_refusal
from annotation.models import RatingStudy
from jury.helm_verdicts.reading import collect
from jury.helm_verdicts.report import HelmVerdictReport
from jury.helm_verdicts.saving import dedupe, save


class _Rollback(Exception):
    pass


def import_helm_verdicts(
    *,
    study: RatingStudy,
    source: HelmSource,
    actor: AbstractBaseUser | None,
    name_hint: str = "",
    run: HelmRun | None = None,
) -> HelmVerdictReport:
    """Import the jury verdicts of a HELM run (a run directory, a zip of one, or
    scenario_state.json, as a path, bytes or a stream) into `study`, all or nothing.

    Items are matched as the item import formed them (helm_rows on the same read of the
    run), so `name_hint` must be what the item import used (the uploaded file's stem) for a
    bare scenario_state.json. Never raises for a problem of the run or the study: the
    report's errors and conflicts say what stopped it (then nothing was saved).
    """
    report = HelmVerdictReport()
    label = str(source) if isinstance(source, str | Path) else (name_hint or "upload")
    if run is None:
        run = read_helm_run(source, name_hint=name_hint)
    parsed = helm_rows(run)
    report.request_states = parsed.total
    fatal = [e for e in parsed.errors if e.order < 0]
    if fatal:
        report.errors.extend(fatal)
        return report
    scores = collect(states=run.request_states or [], parsed=parsed, study=study, report=report)
    scores = dedupe(scores, report)
    if report.conflicts:
        return report
    try:
        with transaction.atomic():
            locked = RatingStudy.objects.select_for_update().get(pk=study.pk)
            if (refusal := lock_refusal(study=locked, what="verdicts")) is not None:
                report.errors.append(RowError("study", refusal))
                raise _Rollback
            save(study=locked, scores=scores, actor=actor, label=label, report=report)
            if not report.ok:
                raise _Rollback
    except _Rollback:
        report.judges_created = []
        report.scores_created = 0
        report.conflicts.sort(key=lambda c: c.order)
        return report
    report.saved = True
    return report


def import_suite_verdicts(
    *,
    study: RatingStudy,
    path: Path,
    label: str,
    folders: list[str],
    actor: AbstractBaseUser | None,
) -> list[tuple[str, HelmVerdictReport]]:
    """The jury verdicts of the runs in `folders` of a suite zip (the runs whose items were
    imported), each run all or nothing: (run name, report) per run, read one at a time."""
    reports: list[tuple[str, HelmVerdictReport]] = []
    with SuiteZip(path, label=label) as suite:
        for folder in folders:
            run = suite.read_run(folder)
            name = run.label or folder
            report = import_helm_verdicts(
                study=study, source=b"", actor=actor, name_hint=name, run=run
            )
            reports.append((name, report))
    return reports
