"""Report snapshots: computed once, stored with their method, never changed. Recomputing
makes a new snapshot linked to the old one, with what moved."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.utils import timezone

from agreement.models import ReportSnapshot
from agreement.services.changes import compare_results
from agreement.services.computing import Progress, compute_report, ignore_progress
from agreement.services.parameters import DEFAULT_PARAMETERS, normalise_parameters
from annotation import audit
from annotation.models import RatingStudy


def create_snapshot(
    *,
    study: RatingStudy,
    actor: AbstractBaseUser | None,
    parameters: Mapping[str, Any],
    previous: ReportSnapshot | None = None,
    progress: Progress = ignore_progress,
) -> ReportSnapshot:
    """Compute the report now and store it; it never changes afterwards. Raises
    ParameterErrors (an AgreementError) for parameters out of range. In the foreground (the
    `agreement_report` command, tests); the site computes through a ReportJob
    (agreement.services.jobs)."""
    params = normalise_parameters(parameters)
    results, method, input_hash = compute_report(study=study, parameters=params, progress=progress)
    if previous is not None:
        results["changes"] = compare_results(
            previous=previous, results=results, input_hash=input_hash, method=method
        )
    title = params.pop("title") or f"Agreement report, {timezone.localtime():%Y-%m-%d %H:%M}"
    with transaction.atomic():
        snapshot = ReportSnapshot.objects.create(
            study=study,
            title=title,
            parameters=params,
            results=results,
            method=method,
            input_hash=input_hash,
            previous=previous,
            created_by=actor if actor is not None and actor.is_authenticated else None,
        )
        audit.record(
            actor=actor,
            action="report.recompute" if previous else "report.create",
            target=snapshot,
            study=study,
            after={
                "title": title,
                "parameters": params,
                "input_hash": input_hash,
                "previous": previous.pk if previous else None,
            },
        )
    # Read back what the database stored (PostgreSQL's jsonb returns floats of magnitude
    # >= 1e16 as integers with the same digits), so callers see exactly what reopening shows.
    snapshot.refresh_from_db()
    return snapshot


def recompute_snapshot(
    *, snapshot: ReportSnapshot, actor: AbstractBaseUser | None
) -> ReportSnapshot:
    """A new snapshot of the same study with the same parameters (and seed) on today's
    scores, linked to ``snapshot``, with a "changes" section."""
    base = snapshot.title.split(" (recomputed")[0]
    parameters = {
        **{k: v for k, v in snapshot.parameters.items() if k in {*DEFAULT_PARAMETERS, "seed"}},
        "title": f"{base} (recomputed {timezone.localtime():%Y-%m-%d %H:%M})",
    }
    return create_snapshot(
        study=snapshot.study, actor=actor, parameters=parameters, previous=snapshot
    )
