"""Saving read verdicts: all or nothing, and never changing a score imported before.

An identical re-import changes nothing (scores "unchanged", no audit row). A different
value, validity or explanation for a score already imported is a conflict, and so are two
different verdicts in one run on the same score: every conflict is reported and nothing is
saved. Runs inside the caller's transaction, with the study row locked.
"""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser

from annotation import audit
from annotation.imports import RowError
from annotation.models import Item, RatingStudy
from jury.helm_verdicts.report import (
    JUDGE_PREFIX,
    HelmVerdictReport,
    Score,
    ScoreKey,
    ScoreState,
    shown,
)
from jury.models import Judge, JudgeScore
from jury.verdict_flags import ScoredCriterion, verdict_flags

AUDIT_ACTION = "jury.helm_import"
MAX_JUDGE_NAME = Judge._meta.get_field("name").max_length


def dedupe(scores: Iterable[Score], report: HelmVerdictReport) -> list[Score]:
    """One score per (item, judge, criterion): a repeat with the same verdict is dropped, a
    different one is a conflict (two scenarios or two request states for one item)."""
    first: dict[ScoreKey, Score] = {}
    for score in scores:
        seen = first.setdefault(score.key, score)
        if seen.state != score.state:
            reason = (
                f"a second verdict of {score.judge_name} on {score.criterion.key} for "
                f"{score.item_label} differs from the first ({seen.where}): "
                f"{shown(seen.state)} vs {shown(score.state)}"
            )
            report.conflicts.append(RowError(score.where, reason, score.order))
    return list(first.values())


def save(
    *,
    study: RatingStudy,
    scores: list[Score],
    actor: AbstractBaseUser | None,
    label: str,
    report: HelmVerdictReport,
) -> None:
    """Check the judges and every score against what is stored, then create the new judges
    and scores and audit them. Stops at the first kind of problem, leaving it in the report
    (the caller then rolls back)."""
    judges = _existing_judges(scores, report)
    if report.errors:
        return
    new = _new_scores(study, scores, judges, report)
    if report.conflicts:
        report.unchanged = 0
        return
    if not _create_judges(new, judges, report):
        return
    flags = _flags(new, report)
    JudgeScore.objects.bulk_create(
        [
            JudgeScore(
                item_id=s.item_id,
                judge=judges[s.judge_name],
                criterion=s.criterion,
                call=None,
                value=s.value,
                is_valid=s.is_valid,
                explanation=s.explanation,
                flags=flags.get((s.item_id, s.judge_name)) or None,
            )
            for s in new
        ],
        batch_size=1000,
    )
    report.scores_created = len(new)
    if new or report.judges_created:
        _audit(study=study, actor=actor, label=label, report=report)


def _flags(
    scores: list[Score], report: HelmVerdictReport
) -> dict[tuple[int, str], list[dict[str, str]]]:
    """The flags of each imported verdict (one judge on one item: its scores on every
    criterion, jury.verdict_flags), by (item id, judge name), each also in the report."""
    verdicts: dict[tuple[int, str], list[Score]] = {}
    for score in scores:
        verdicts.setdefault((score.item_id, score.judge_name), []).append(score)
    texts = {
        pk: (output, (question, reference))
        for pk, output, question, reference in Item.objects.filter(
            pk__in={item_id for item_id, _judge in verdicts}
        ).values_list("pk", "output_text", "input_text", "reference_text")
    }
    out = {}
    for (item_id, judge), verdict in verdicts.items():
        response, context = texts[item_id]
        scored = [
            ScoredCriterion(
                key=s.criterion.key,
                value=s.value if s.is_valid else None,
                explanation=s.explanation,
                scale_min=s.criterion.scale_min,
                scale_max=s.criterion.scale_max,
            )
            for s in verdict
        ]
        found = verdict_flags(response=response, scores=scored, context=context)
        if found:
            out[(item_id, judge)] = [f.as_json() for f in found]
            where = f"{judge} on {verdict[0].item_label}"
            report.flagged += [RowError(where, f.message, verdict[0].order) for f in found]
    return out


def _existing_judges(scores: list[Score], report: HelmVerdictReport) -> dict[str, Judge]:
    """The judges the scores name that exist already; a name too long for a judge, or an
    existing judge that is not an imported one, is an error."""
    names = sorted({s.judge_name for s in scores})
    for name in names:
        if len(name) > MAX_JUDGE_NAME:  # model_id (the bare key) allows more
            reason = f"judge key {name[len(JUDGE_PREFIX) :]!r} is too long"
            report.errors.append(RowError("judges", reason))
    judges = {j.name: j for j in Judge.objects.filter(name__in=names)}
    for name, judge in judges.items():
        if judge.provider != Judge.Provider.IMPORTED:
            reason = (
                f"a judge named {name!r} exists with provider {judge.provider!r}; imported "
                "verdicts need an imported judge (rename the existing judge)"
            )
            report.errors.append(RowError("judges", reason))
    return judges


def _new_scores(
    study: RatingStudy, scores: list[Score], judges: dict[str, Judge], report: HelmVerdictReport
) -> list[Score]:
    """The scores not stored yet; counts the unchanged ones and reports the conflicts."""
    existing = _stored_states(study, judges)
    new: list[Score] = []
    for score in scores:
        current = existing.get(score.key)
        if current is None:
            new.append(score)
        elif current == score.state:
            report.unchanged += 1
        else:
            reason = _conflict_reason(score, current)
            report.conflicts.append(RowError(score.where, reason, score.order))
    return new


def _stored_states(study: RatingStudy, judges: dict[str, Judge]) -> dict[ScoreKey, ScoreState]:
    if not judges:
        return {}
    rows = JudgeScore.objects.filter(
        item__study=study, judge__in=judges.values(), call__isnull=True
    ).values_list("item_id", "judge__name", "criterion_id", "value", "is_valid", "explanation")
    return {
        (item_id, judge_name, criterion_id): (value, is_valid, explanation)
        for item_id, judge_name, criterion_id, value, is_valid, explanation in rows.iterator(
            chunk_size=2000
        )
    }


def _conflict_reason(score: Score, existing: ScoreState) -> str:
    what = f"{score.judge_name}'s {score.criterion.key} score for {score.item_label}"
    if existing[:2] == score.state[:2]:
        return (
            f"{what} is already imported with a different explanation; "
            "an import never changes an existing score"
        )
    return (
        f"{what} is already imported as {shown(existing)}, this run says {shown(score.state)}; "
        "an import never changes an existing score"
    )


def _create_judges(new: list[Score], judges: dict[str, Judge], report: HelmVerdictReport) -> bool:
    """Create the imported judges the new scores need; False (with an error) when a judge
    of that name that is not imported appeared meanwhile."""
    for name in sorted({s.judge_name for s in new} - set(judges)):
        judge, created = Judge.objects.get_or_create(
            name=name,
            defaults={
                "provider": Judge.Provider.IMPORTED,
                "model_id": name[len(JUDGE_PREFIX) :],
                "is_active": True,
            },
        )
        if judge.provider != Judge.Provider.IMPORTED:
            reason = f"a judge named {name!r} exists and is not imported"
            report.errors.append(RowError("judges", reason))
            return False
        judges[name] = judge
        if created:
            report.judges_created.append(name)
    return True


def _audit(
    *, study: RatingStudy, actor: AbstractBaseUser | None, label: str, report: HelmVerdictReport
) -> None:
    audit.record(
        actor=actor,
        action=AUDIT_ACTION,
        target=study,
        study=study,
        after={
            "source": label,
            "judges_created": report.judges_created,
            "scores_created": report.scores_created,
            "unchanged": report.unchanged,
            "invalid": len(report.invalid),
            "missing": report.missing,
            "unknown_criteria": report.unknown_criteria,
            "unmatched": len(report.unmatched),
        },
    )
