"""A whole rating study as one archive (agreement.archive.container): rubric, items, members
as pseudonyms, assignments, ratings, attention checks, calibration items (with their
references) and the raters' calibration completions, jury runs with their calls and verdicts, metric scores,
report snapshots and the audit rows.

No username or e-mail address leaves the site: every person the study names is a "person"
row labelled with their pseudonym in the study (or "outsider-N" for someone who is not a
member, such as a site administrator), and audit and report JSON that quotes a username or
address has it replaced by that label. The rows keep their ids as `ref`s so the import can
link them again.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db.models import Model, Q

from agreement.archive.container import write_archive
from agreement.models import ReportSnapshot
from annotation import audit
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
    RubricCriterion,
    StudyMembership,
)
from jury.models import Judge, JudgeCall, JudgeScore, JuryRun, MetricScore, PromptTemplate

STUDY_FIELDS = (
    "name",
    "instructions",
    "ratings_per_item",
    "show_reference",
    "comment_required_at_or_below",
    "exclusion_metadata_key",
    "assignment_seed",
    "locked_at",
    "created_at",
)
MEMBERSHIP_FIELDS = ("role", "pseudonym", "is_active", "is_imported", "created_at")
CRITERION_FIELDS = (
    "key",
    "label",
    "definition",
    "scale_min",
    "scale_max",
    "anchors",
    "allow_cannot_assess",
    "allows_decimals",
    "position",
)
ITEM_FIELDS = (
    "external_id",
    "benchmark",
    "input_text",
    "reference_text",
    "output_text",
    "model_name",
    "metadata",
    "created_at",
)
ASSIGNMENT_FIELDS = (
    "position",
    "status",
    "flagged",
    "flag_reason",
    "flag_resolved_at",
    "flag_resolution",
    "time_spent_seconds",
    "created_at",
    "started_at",
    "first_submitted_at",
    "submitted_at",
    "updated_at",
)
RATING_FIELDS = (
    "value",
    "cannot_assess",
    "comment",
    "first_value",
    "first_cannot_assess",
    "first_submitted_at",
    "created_at",
    "updated_at",
)
IMPORTED_RATING_FIELDS = ("value", "comment", "created_at")
CHECK_FIELDS = ("expected", "note", "created_at")
CALIBRATION_FIELDS = ("reference", "note", "set_at", "created_at")
# `summary`: the agreement with the reference the rater was shown when their queue opened.
COMPLETION_FIELDS = ("completed_at", "n_items", "summary")
# What a judge is, without where it runs (endpoint, key variable): the importing site sets those.
JUDGE_FIELDS = (
    "name",
    "description",
    "provider",
    "model_id",
    "params",
    "structured_output",
    "weight",
    "price_input_per_mtok",
    "price_output_per_mtok",
)
TEMPLATE_FIELDS = ("name", "version", "system_text", "body", "created_at")
RUN_FIELDS = ("filters", "status", "cancel_requested", "created_at", "started_at", "finished_at")
CALL_FIELDS = (
    "prompt_hash",
    "system_text",
    "prompt_text",
    "status",
    "raw_output",
    "error",
    "input_tokens",
    "output_tokens",
    "cost",
    "latency_ms",
    "attempts",
    "finish_reason",
    "flags",
    "created_at",
    "finished_at",
)
JUDGE_SCORE_FIELDS = ("value", "is_valid", "explanation", "flags", "created_at")
METRIC_FIELDS = ("metric", "value", "scorer_model", "scorer_layer", "params", "created_at")
SNAPSHOT_FIELDS = ("title", "parameters", "results", "method", "input_hash", "created_at")
AUDIT_FIELDS = ("at", "action", "target_type", "target_id", "before", "after")


def _fields(obj: Model, names: Iterable[str]) -> dict[str, Any]:
    return {name: getattr(obj, name) for name in names}


class _People:
    """Person refs and labels for every user the study names; replaces their usernames and
    addresses in free JSON by the label."""

    def __init__(self, study: RatingStudy) -> None:
        self.label: dict[int, str] = {}
        for user_id, pseudonym in (
            StudyMembership.objects.filter(study=study)
            .exclude(pseudonym="")
            .order_by("role", "pk")
            .values_list("user_id", "pseudonym")
        ):
            self.label.setdefault(user_id, pseudonym)
        self._outsiders = 0
        self._names: dict[str, str] = {}

    def ref(self, user_id: int | None) -> str | None:
        if user_id is None:
            return None
        if user_id not in self.label:
            self._outsiders += 1
            self.label[user_id] = f"outsider-{self._outsiders}"
        return f"p{user_id}"

    def rows(self) -> list[dict[str, Any]]:
        return [{"ref": f"p{pk}", "label": label} for pk, label in sorted(self.label.items())]

    def load_names(self) -> None:
        """Usernames and addresses of every person (after all refs are taken), longest first."""
        user_model = get_user_model()
        names: dict[str, str] = {}
        for pk, username, email in user_model.objects.filter(pk__in=self.label).values_list(
            "pk", user_model.USERNAME_FIELD, "email"
        ):
            for name in (username, email):
                if name:
                    names[name] = self.label[pk]
        self._names = dict(sorted(names.items(), key=lambda kv: -len(kv[0])))

    def scrub(self, value: Any) -> Any:
        """`value` with every username and address of the study's people replaced."""
        if isinstance(value, str):
            for name, label in self._names.items():
                if name in value:
                    value = value.replace(name, label)
            return value
        if isinstance(value, list):
            return [self.scrub(v) for v in value]
        if isinstance(value, dict):
            return {self.scrub(k): self.scrub(v) for k, v in value.items()}
        return value


def _node(item: Item) -> dict[str, str] | None:
    node = item.taxonomy_node
    return None if node is None else {"version": node.version.name, "identity": str(node.identity)}


def _annotation_tables(study: RatingStudy, people: _People) -> dict[str, list[dict[str, Any]]]:
    tables: dict[str, list[dict[str, Any]]] = {}
    tables["study.jsonl"] = [
        {
            **_fields(study, STUDY_FIELDS),
            "taxonomy_version": study.taxonomy_version.name if study.taxonomy_version else None,
            "created_by": people.ref(study.created_by_id),
        }
    ]
    tables["memberships.jsonl"] = [
        {"ref": m.pk, "person": people.ref(m.user_id), **_fields(m, MEMBERSHIP_FIELDS)}
        for m in StudyMembership.objects.filter(study=study).order_by("pk")
    ]
    tables["criteria.jsonl"] = [
        {"ref": c.pk, **_fields(c, CRITERION_FIELDS)}
        for c in RubricCriterion.objects.filter(study=study).order_by("pk")
    ]
    items = Item.objects.filter(study=study).select_related("taxonomy_node__version")
    tables["items.jsonl"] = [
        {"ref": i.pk, **_fields(i, ITEM_FIELDS), "taxonomy_node": _node(i)}
        for i in items.order_by("pk")
    ]
    tables["assignments.jsonl"] = [
        {
            "ref": a.pk,
            "item": a.item_id,
            "clinician": people.ref(a.clinician_id),
            "flag_resolved_by": people.ref(a.flag_resolved_by_id),
            **_fields(a, ASSIGNMENT_FIELDS),
        }
        for a in Assignment.objects.filter(study=study).order_by("pk")
    ]
    tables["ratings.jsonl"] = [
        {"assignment": r.assignment_id, "criterion": r.criterion_id, **_fields(r, RATING_FIELDS)}
        for r in Rating.objects.filter(assignment__study=study).order_by("pk")
    ]
    tables["imported_ratings.jsonl"] = [
        {
            "item": r.item_id,
            "rater": r.rater_id,
            "criterion": r.criterion_id,
            "created_by": people.ref(r.created_by_id),
            **_fields(r, IMPORTED_RATING_FIELDS),
        }
        for r in ImportedRating.objects.filter(study=study).order_by("pk")
    ]
    return tables | _planted_tables(study, people)


def _planted_tables(study: RatingStudy, people: _People) -> dict[str, list[dict[str, Any]]]:
    """The attention checks and calibration items (which keep their items out of every
    statistic) and who finished calibration, with what they were shown."""
    return {
        "attention_checks.jsonl": [
            {
                "ref": c.pk,
                "item": c.item_id,
                "created_by": people.ref(c.created_by_id),
                **_fields(c, CHECK_FIELDS),
            }
            for c in AttentionCheck.objects.filter(study=study).order_by("pk")
        ],
        "calibration_items.jsonl": [
            {
                "ref": c.pk,
                "item": c.item_id,
                "set_by": people.ref(c.set_by_id),
                **_fields(c, CALIBRATION_FIELDS),
            }
            for c in CalibrationItem.objects.filter(study=study).order_by("pk")
        ],
        "calibration_completions.jsonl": [
            {"ref": c.pk, "clinician": people.ref(c.clinician_id), **_fields(c, COMPLETION_FIELDS)}
            for c in CalibrationCompletion.objects.filter(study=study).order_by("pk")
        ],
    }


def _jury_tables(study: RatingStudy, people: _People) -> dict[str, list[dict[str, Any]]]:
    runs = list(JuryRun.objects.filter(study=study).prefetch_related("judges").order_by("pk"))
    calls = JudgeCall.objects.filter(run__study=study).order_by("pk")
    scores = JudgeScore.objects.filter(item__study=study).order_by("pk")
    judge_ids = set(calls.values_list("judge_id", flat=True)) | set(
        scores.values_list("judge_id", flat=True)
    )
    judge_ids |= {j.pk for run in runs for j in run.judges.all()}
    judges = {j.pk: j for j in Judge.objects.filter(pk__in=judge_ids)}
    templates = PromptTemplate.objects.filter(
        Q(study=study) | Q(pk__in=[r.prompt_template_id for r in runs])
    ).order_by("pk")
    return {
        "judges.jsonl": [_fields(j, JUDGE_FIELDS) for j in sorted(judges.values(), key=str)],
        "prompt_templates.jsonl": [
            {
                "ref": t.pk,
                "of_study": t.study_id is not None,
                "created_by": people.ref(t.created_by_id),
                **_fields(t, TEMPLATE_FIELDS),
            }
            for t in templates
        ],
        "jury_runs.jsonl": [
            {
                "ref": r.pk,
                "prompt_template": r.prompt_template_id,
                "judges": sorted(judges[j.pk].name for j in r.judges.all()),
                "created_by": people.ref(r.created_by_id),
                **_fields(r, RUN_FIELDS),
            }
            for r in runs
        ],
        "judge_calls.jsonl": [
            {
                "ref": c.pk,
                "run": c.run_id,
                "judge": judges[c.judge_id].name,
                "item": c.item_id,
                "cached_from": c.cached_from_id,
                **_fields(c, CALL_FIELDS),
            }
            for c in calls
        ],
        "judge_scores.jsonl": [
            {
                "item": s.item_id,
                "judge": judges[s.judge_id].name,
                "criterion": s.criterion_id,
                "call": s.call_id,
                **_fields(s, JUDGE_SCORE_FIELDS),
            }
            for s in scores
        ],
        "metric_scores.jsonl": [
            {"item": m.item_id, **_fields(m, METRIC_FIELDS)}
            for m in MetricScore.objects.filter(item__study=study).order_by("pk")
        ],
    }


def _report_and_audit_tables(
    study: RatingStudy, people: _People
) -> dict[str, list[dict[str, Any]]]:
    snapshots = [
        {
            "ref": s.pk,
            "previous": s.previous_id,
            "created_by": people.ref(s.created_by_id),
            **_fields(s, SNAPSHOT_FIELDS),
        }
        for s in ReportSnapshot.objects.filter(study=study).order_by("pk")
    ]
    events = [
        {"actor": people.ref(e.actor_id), **_fields(e, AUDIT_FIELDS)}
        for e in AuditEvent.objects.filter(study=study).order_by("pk")
    ]
    return {"report_snapshots.jsonl": snapshots, "audit.jsonl": events}


# Free text and JSON that may quote a username or address (the account unlocks, an item's
# exclusion metadata naming its author, a coordinator's note), member by member.
SCRUBBED = {
    "audit.jsonl": ("before", "after", "target_id"),
    "report_snapshots.jsonl": ("title", "parameters", "results", "method"),
    "items.jsonl": ("metadata",),
    "study.jsonl": ("name", "instructions"),
    # coordinators' notes say who agreed a reference or planted a check
    "attention_checks.jsonl": ("note",),
    "calibration_items.jsonl": ("note",),
}


def study_archive(*, study: RatingStudy) -> bytes:
    """The archive of `study` (agreement.archive.container), ready to be written to a file."""
    people = _People(study)
    tables = _annotation_tables(study, people)
    tables |= _jury_tables(study, people)
    tables |= _report_and_audit_tables(study, people)
    tables["people.jsonl"] = people.rows()
    people.load_names()
    for member, keys in SCRUBBED.items():
        for row in tables[member]:
            for key in keys:
                row[key] = people.scrub(row[key])
    return write_archive(tables, study_name=study.name)


def export_study(*, study: RatingStudy, actor: AbstractBaseUser | None) -> bytes:
    """The archive of `study`, and an audit row saying who took it (a whole study leaves)."""
    data = study_archive(study=study)
    audit.record(
        actor=actor,
        action="study.export",
        target=study,
        study=study,
        after={"archive_sha256": hashlib.sha256(data).hexdigest(), "bytes": len(data)},
    )
    return data
