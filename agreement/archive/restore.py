"""Import a study archive (agreement.archive.container) as a new study, all or nothing.

Everything is read and checked first (format version, hashes, counts, the taxonomy the items
are filed under, judges that exist here under the same name); then one transaction writes
the study. An import never touches an existing study: it makes a new one, whose people are
new accounts that cannot log in, named by their pseudonym in the archive.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.hashers import make_password
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Case, Model, Value, When
from django.utils.dateparse import parse_datetime

from agreement.archive import export as spec
from agreement.archive.container import ArchiveError, read_archive
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
from delphi.models import TaxonomyNode, TaxonomyVersion
from jury.models import Judge, JudgeCall, JudgeScore, JuryRun, MetricScore, PromptTemplate

Rows = list[dict[str, Any]]
Refs = dict[Any, int]


def _fields(row: Mapping[str, Any], names: Iterable[str]) -> dict[str, Any]:
    return {name: row[name] for name in names}


def _when(value: Any) -> datetime | None:
    return parse_datetime(value) if isinstance(value, str) else value


def _restore_times(model: type[Model], rows: Rows, refs: Refs, fields: Iterable[str]) -> None:
    """Put back the times the archive holds (auto_now fields are set anew on insert)."""
    fields = list(fields)
    pairs = [(refs[row["ref"]], row) for row in rows]
    for start in range(0, len(pairs), 500):
        chunk = pairs[start : start + 500]
        model.objects.filter(pk__in=[pk for pk, _ in chunk]).update(
            **{
                field: Case(
                    *(When(pk=pk, then=Value(_when(row[field]))) for pk, row in chunk),
                    output_field=model._meta.get_field(field),
                )
                for field in fields
            }
        )


def _insert(
    model: type[Model], rows: Rows, build: Callable[[dict[str, Any]], Model], *, times: tuple = ()
) -> Refs:
    """Insert one object per row (in the archive's order) and map each row's ref to its id."""
    for index, row in enumerate(rows):
        row.setdefault("ref", ("row", index))
    objects = model.objects.bulk_create([build(row) for row in rows], batch_size=500)
    refs = {row["ref"]: obj.pk for row, obj in zip(rows, objects, strict=True)}
    if times and rows:
        _restore_times(model, rows, refs, times)
    return refs


def _taxonomy(tables: Mapping[str, Rows]) -> tuple[TaxonomyVersion | None, dict[tuple, int]]:
    study = tables["study.jsonl"][0]
    version = None
    if study["taxonomy_version"]:
        version = TaxonomyVersion.objects.filter(name=study["taxonomy_version"]).first()
        if version is None:
            raise ArchiveError(
                f"the study uses taxonomy version {study['taxonomy_version']!r}, which this "
                "site does not have: load it first",
                field="study.jsonl",
            )
    wanted = {
        (n["version"], n["identity"]) for i in tables["items.jsonl"] if (n := i["taxonomy_node"])
    }
    found = {
        (name, str(identity)): pk
        for pk, name, identity in TaxonomyNode.objects.filter(
            version__name__in={v for v, _ in wanted}
        ).values_list("pk", "version__name", "identity")
        if (name, str(identity)) in wanted
    }
    missing = sorted({v for v, i in wanted if (v, i) not in found})
    if missing:
        raise ArchiveError(
            f"items are filed under taxonomy nodes this site does not have (versions "
            f"{', '.join(missing)}): load those taxonomy versions first",
            field="items.jsonl",
        )
    return version, found


def _judges(rows: Rows) -> dict[str, Judge]:
    """The judges by name: this site's own where it has one of the same name and model,
    else a new inactive one (its endpoint and key are for the site to set)."""
    existing = {j.name: j for j in Judge.objects.filter(name__in=[r["name"] for r in rows])}
    out = {}
    for row in rows:
        judge = existing.get(row["name"])
        if judge is None:
            judge = Judge.objects.create(**_fields(row, spec.JUDGE_FIELDS), is_active=False)
        elif (judge.provider, judge.model_id) != (row["provider"], row["model_id"]):
            raise ArchiveError(
                f"judge {row['name']!r} here is {judge.provider}/{judge.model_id}, in the "
                f"archive {row['provider']}/{row['model_id']}: rename one of them first",
                field="judges.jsonl",
            )
        out[row["name"]] = judge
    return out


def _templates(rows: Rows, study: RatingStudy, people: Refs) -> Refs:
    refs: Refs = {}
    for row in rows:
        same = PromptTemplate.objects.filter(name=row["name"], version=row["version"]).first()
        if same is None:
            same = PromptTemplate.objects.create(
                **_fields(row, spec.TEMPLATE_FIELDS),
                study=study if row["of_study"] else None,
                created_by_id=people.get(row["created_by"]),
            )
        elif (same.body, same.system_text) != (row["body"], row["system_text"]):
            raise ArchiveError(
                f"prompt template {row['name']} v{row['version']} exists here with another text",
                field="prompt_templates.jsonl",
            )
        refs[row["ref"]] = same.pk
    return refs


def _people(rows: Rows) -> Refs:
    """One new account per person, that cannot log in, named by their label."""
    prefix = f"archived-{secrets.token_hex(3)}"
    user_model = get_user_model()
    users = [
        user_model(
            **{user_model.USERNAME_FIELD: f"{prefix}-{row['label']}"[:150]},
            password=make_password(None),
            is_active=False,
        )
        for row in rows
    ]
    return {
        row["ref"]: u.pk for row, u in zip(rows, user_model.objects.bulk_create(users), strict=True)
    }


def _annotation(tables: Mapping[str, Rows], study: RatingStudy, people: Refs, nodes: dict) -> dict:
    s = study.pk
    refs: dict[str, Refs] = {"people": people}
    refs["memberships"] = _insert(
        StudyMembership,
        tables["memberships.jsonl"],
        lambda r: StudyMembership(
            study_id=s, user_id=people[r["person"]], **_fields(r, spec.MEMBERSHIP_FIELDS)
        ),
        times=("created_at",),
    )
    refs["criteria"] = _insert(
        RubricCriterion,
        tables["criteria.jsonl"],
        lambda r: RubricCriterion(study_id=s, **_fields(r, spec.CRITERION_FIELDS)),
    )
    refs["items"] = items = _insert(
        Item,
        tables["items.jsonl"],
        lambda r: Item(
            study_id=s,
            taxonomy_node_id=(
                nodes[(r["taxonomy_node"]["version"], r["taxonomy_node"]["identity"])]
                if r["taxonomy_node"]
                else None
            ),
            **_fields(r, spec.ITEM_FIELDS),
        ),
        times=("created_at",),
    )
    refs["assignments"] = _insert(
        Assignment,
        tables["assignments.jsonl"],
        lambda r: Assignment(
            study_id=s,
            item_id=items[r["item"]],
            clinician_id=people[r["clinician"]],
            flag_resolved_by_id=people.get(r["flag_resolved_by"]),
            **_fields(r, spec.ASSIGNMENT_FIELDS),
        ),
        times=("created_at", "updated_at"),
    )
    criteria = refs["criteria"]
    _insert(
        Rating,
        tables["ratings.jsonl"],
        lambda r: Rating(
            assignment_id=refs["assignments"][r["assignment"]],
            criterion_id=criteria[r["criterion"]],
            **_fields(r, spec.RATING_FIELDS),
        ),
        times=("created_at", "updated_at"),
    )
    _insert(
        ImportedRating,
        tables["imported_ratings.jsonl"],
        lambda r: ImportedRating(
            study_id=s,
            item_id=items[r["item"]],
            rater_id=refs["memberships"][r["rater"]],
            criterion_id=criteria[r["criterion"]],
            created_by_id=people.get(r["created_by"]),
            **_fields(r, spec.IMPORTED_RATING_FIELDS),
        ),
        times=("created_at",),
    )
    _planted(tables, study, refs)
    return refs


def _planted(tables: Mapping[str, Rows], study: RatingStudy, refs: dict) -> None:
    """The attention checks and calibration items on the imported items, and the raters'
    calibration completions (none in a version-1 archive)."""
    s, people, items = study.pk, refs["people"], refs["items"]
    refs["checks"] = _insert(
        AttentionCheck,
        tables["attention_checks.jsonl"],
        lambda r: AttentionCheck(
            study_id=s,
            item_id=items[r["item"]],
            created_by_id=people.get(r["created_by"]),
            **_fields(r, spec.CHECK_FIELDS),
        ),
        times=("created_at",),
    )
    refs["calibration_items"] = _insert(
        CalibrationItem,
        tables["calibration_items.jsonl"],
        lambda r: CalibrationItem(
            study_id=s,
            item_id=items[r["item"]],
            set_by_id=people.get(r["set_by"]),
            **_fields(r, spec.CALIBRATION_FIELDS),
        ),
        times=("created_at",),
    )
    refs["calibration_completions"] = _insert(
        CalibrationCompletion,
        tables["calibration_completions.jsonl"],
        lambda r: CalibrationCompletion(
            study_id=s, clinician_id=people[r["clinician"]], **_fields(r, spec.COMPLETION_FIELDS)
        ),
    )


def _jury(tables: Mapping[str, Rows], study: RatingStudy, refs: dict) -> None:
    people, items, criteria = refs["people"], refs["items"], refs["criteria"]
    judges = _judges(tables["judges.jsonl"])
    templates = _templates(tables["prompt_templates.jsonl"], study, people)
    run_rows = tables["jury_runs.jsonl"]
    refs["runs"] = runs = _insert(
        JuryRun,
        run_rows,
        lambda r: JuryRun(
            study=study,
            prompt_template_id=templates[r["prompt_template"]],
            created_by_id=people.get(r["created_by"]),
            **_fields(r, spec.RUN_FIELDS),
        ),
        times=("created_at",),
    )
    links = JuryRun.judges.through
    links.objects.bulk_create(
        links(juryrun_id=runs[r["ref"]], judge_id=judges[name].pk)
        for r in run_rows
        for name in r["judges"]
    )
    call_rows = tables["judge_calls.jsonl"]
    calls = _insert(
        JudgeCall,
        call_rows,
        lambda r: JudgeCall(
            run_id=runs[r["run"]],
            judge=judges[r["judge"]],
            item_id=items[r["item"]],
            **_fields(r, spec.CALL_FIELDS),
        ),
        times=("created_at",),
    )
    for r in call_rows:  # a reused verdict from a call of this study keeps its link
        if r["cached_from"] in calls:
            JudgeCall.objects.filter(pk=calls[r["ref"]]).update(cached_from=calls[r["cached_from"]])
    _insert(
        JudgeScore,
        tables["judge_scores.jsonl"],
        lambda r: JudgeScore(
            item_id=items[r["item"]],
            judge=judges[r["judge"]],
            criterion_id=criteria[r["criterion"]],
            call_id=calls[r["call"]] if r["call"] is not None else None,
            **_fields(r, spec.JUDGE_SCORE_FIELDS),
        ),
        times=("created_at",),
    )
    _insert(
        MetricScore,
        tables["metric_scores.jsonl"],
        lambda r: MetricScore(item_id=items[r["item"]], **_fields(r, spec.METRIC_FIELDS)),
        times=("created_at",),
    )


# Audit rows name their target by id: these are re-pointed at the imported rows.
TARGETS = {
    "Assignment": "assignments",
    "Item": "items",
    "StudyMembership": "memberships",
    "RubricCriterion": "criteria",
    "JuryRun": "runs",
    "ReportSnapshot": "snapshots",
    "AttentionCheck": "checks",
    "CalibrationItem": "calibration_items",
    "CalibrationCompletion": "calibration_completions",
}


def _reports_and_audit(tables: Mapping[str, Rows], study: RatingStudy, refs: dict) -> None:
    people = refs["people"]
    snapshot_rows = tables["report_snapshots.jsonl"]
    refs["snapshots"] = snapshots = _insert(
        ReportSnapshot,
        snapshot_rows,
        lambda r: ReportSnapshot(
            study=study,
            created_by_id=people.get(r["created_by"]),
            **_fields(r, spec.SNAPSHOT_FIELDS),
        ),
        times=("created_at",),
    )
    for r in snapshot_rows:
        if r["previous"] in snapshots:
            ReportSnapshot.objects.filter(pk=snapshots[r["ref"]]).update(
                previous=snapshots[r["previous"]]
            )

    def target(row: dict[str, Any]) -> str:
        if row["target_type"] == "RatingStudy":
            return str(study.pk)
        mapped = refs.get(TARGETS.get(row["target_type"], ""), {})
        key = int(row["target_id"]) if row["target_id"].isdigit() else row["target_id"]
        return str(mapped.get(key, row["target_id"]))

    _insert(
        AuditEvent,
        tables["audit.jsonl"],
        lambda r: AuditEvent(
            study=study,
            actor_id=people.get(r["actor"]),
            **{**_fields(r, spec.AUDIT_FIELDS), "target_id": target(r)},
        ),
        times=("at",),
    )


def import_study(*, data: bytes, actor: AbstractBaseUser | None) -> RatingStudy:
    """A new study from the archive `data`; nothing is written unless all of it is."""
    tables = read_archive(data)
    if len(tables["study.jsonl"]) != 1:
        raise ArchiveError("study.jsonl must hold exactly one study", field="study.jsonl")
    with transaction.atomic():
        version, nodes = _taxonomy(tables)
        people = _people(tables["people.jsonl"])
        row = tables["study.jsonl"][0]
        study = RatingStudy.objects.create(
            **_fields(row, spec.STUDY_FIELDS),
            taxonomy_version=version,
            created_by_id=people[row["created_by"]],
        )
        _restore_times(RatingStudy, [{**row, "ref": 0}], {0: study.pk}, ("created_at",))
        refs = _annotation(tables, study, people, nodes)
        _jury(tables, study, refs)
        _reports_and_audit(tables, study, refs)
        audit.record(
            actor=actor,
            action="study.import",
            target=study,
            study=study,
            after={
                "archive_sha256": hashlib.sha256(data).hexdigest(),
                "rows": {name: len(rows) for name, rows in tables.items()},
            },
        )
    study.refresh_from_db()
    return study
