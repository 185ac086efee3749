"""Reads for the clinician: their queues, one assignment as a rater sees it, where it sits.

Nothing here returns a model name to a clinician-facing caller, nor any id: a rater knows
an assignment only by its opaque handle. Item and assignment ids follow import order, and
an import usually holds one model, so an id would let a rater group outputs by model.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.db.models import Count, Q, QuerySet

from annotation.models import Assignment, Item, RatingStudy
from annotation.selectors.next_assignment import moving_on_sql
from annotation.selectors.studies import Role, studies_for


@dataclass(frozen=True)
class QueueProgress:
    study: RatingStudy
    total: int
    submitted: int
    in_progress: int

    @property
    def remaining(self) -> int:
        return self.total - self.submitted

    @property
    def percent_done(self) -> int:
        return round(100 * self.submitted / self.total) if self.total else 100


def clinician_progress(*, user: AbstractBaseUser) -> list[QueueProgress]:
    """Per study the clinician rates: how much of their queue is done (one query)."""
    rows = (
        Assignment.objects.filter(
            clinician=user,
            study__memberships__user=user,
            study__memberships__role=Role.CLINICIAN,
            study__memberships__is_active=True,
        )
        .exclude(status=Assignment.Status.WITHDRAWN)
        .values("study")
        .annotate(
            total=Count("id"),
            submitted=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
            in_progress=Count("id", filter=Q(status=Assignment.Status.IN_PROGRESS)),
        )
    )
    counts = {r["study"]: r for r in rows}
    studies = studies_for(user=user, role=Role.CLINICIAN)
    return [
        QueueProgress(
            study=s,
            total=counts.get(s.pk, {}).get("total", 0),
            submitted=counts.get(s.pk, {}).get("submitted", 0),
            in_progress=counts.get(s.pk, {}).get("in_progress", 0),
        )
        for s in studies
    ]


def clinician_queue(*, study: RatingStudy, user: AbstractBaseUser) -> QuerySet[Assignment]:
    """The clinician's own assignments in their own order. Items carry no model name here:
    only the fields a rater may see are loaded."""
    return (
        Assignment.objects.filter(study=study, clinician=user)
        .exclude(status=Assignment.Status.WITHDRAWN)
        .select_related("item", "item__taxonomy_node")
        .only(
            "id",
            "handle",
            "position",
            "status",
            "flagged",
            "flag_resolved_at",
            "flag_resolution",
            "submitted_at",
            "time_spent_seconds",
            "item__id",
            "item__input_text",
            "item__taxonomy_node__name",
            "study_id",
            "clinician_id",
        )
        .order_by("position")
    )


@dataclass(frozen=True)
class RaterItem:
    """Everything a clinician may see about one assignment, and nothing more: no model name,
    no other clinician's rating, no machine score, no id."""

    handle: str
    position: int
    status: str
    flagged: bool
    flag_reason: str
    input_text: str
    context_text: str  # what the model was shown before the input (Item.PROMPT_CONTEXT_KEY)
    reference_text: str | None
    output_text: str
    area: str
    time_spent_seconds: float
    updated_at_ms: int
    answers: dict[str, dict[str, object]]


def rater_item(
    *, assignment: Assignment, answers: dict[str, dict[str, object]] | None = None
) -> RaterItem:
    """The rater's view of an assignment (its study and item loaded with it). `answers`: its
    stored answers by criterion key in rubric order, when the caller has them already (from
    rubric_answers, or a service that just wrote them); else they are read."""
    study = assignment.study
    item = assignment.item
    if answers is None:
        answers = {
            key: {"value": value, "cannot_assess": cannot_assess, "comment": comment}
            for key, value, cannot_assess, comment in assignment.ratings.order_by(
                "criterion__position"
            ).values_list("criterion__key", "value", "cannot_assess", "comment")
        }
    return RaterItem(
        handle=assignment.handle,
        position=assignment.position,
        status=assignment.status,
        flagged=assignment.flagged,
        flag_reason=assignment.flag_reason,
        input_text=item.input_text,
        context_text=prompt_context(item),
        reference_text=item.reference_text if study.show_reference else None,
        output_text=item.output_text,
        area=item.taxonomy_node.name if item.taxonomy_node_id else "",
        time_spent_seconds=assignment.time_spent_seconds,
        updated_at_ms=int(assignment.updated_at.timestamp() * 1000),
        answers=answers,
    )


def prompt_context(item: Item) -> str:
    """The item's context for its rater (the only metadata key shown), "" when none."""
    context = (
        item.metadata.get(Item.PROMPT_CONTEXT_KEY) if isinstance(item.metadata, dict) else None
    )
    return context if isinstance(context, str) else ""


@dataclass(frozen=True)
class CaseCopy:
    letter: str  # "A", "B", ...: this response's place among the rater's copies of the case
    count: int


def case_copy(*, assignment: Assignment) -> CaseCopy | None:
    """When the rater has more than one response to the same case (items sharing an external
    id, e.g. one per model), which of them this is: lettered in the rater's own (shuffled)
    order, so stable for the rater and unrelated to the model or the import order. None for
    a case the rater sees once. Withdrawn copies keep their letter, so letters never move."""
    handles = list(
        Assignment.objects.filter(
            study_id=assignment.study_id,
            clinician_id=assignment.clinician_id,
            item__external_id=assignment.item.external_id,
        )
        .order_by("position", "handle")
        .values_list("handle", flat=True)
    )
    if len(handles) < 2:
        return None
    return CaseCopy(letter=copy_letter(handles.index(assignment.handle)), count=len(handles))


def copy_letter(index: int) -> str:
    """0 -> A, 25 -> Z, 26 -> AA, ... (spreadsheet columns)."""
    if index < 0:
        raise ValueError(f"a copy's index is 0 or more, got {index}")
    letter = ""
    while True:
        index, rest = divmod(index, 26)
        letter = chr(ord("A") + rest) + letter
        if index == 0:
            return letter
        index -= 1


@dataclass(frozen=True)
class QueuePosition:
    index: int  # 1-based place in the clinician's own order
    total: int
    submitted: int
    # the neighbours' handles
    previous: str | None
    next: str | None
    # where the rater moves on to after submitting this one (next_assignment.moving_on_sql)
    next_unfinished: str | None
    # this response's place among the rater's copies of its case (see case_copy)
    copy: CaseCopy | None = None


# One statement of scalar subqueries over the clinician's queue (the index on study,
# clinician, position serves each). Plain SQL: the ORM took about 4 ms of CPU to compile the
# same query, more than anything else on the rating page (bench/README.md, bench_rating).
_POSITION_SQL = """
SELECT
  (SELECT COUNT(*) FROM {a} q WHERE {mine}) AS n_total,
  (SELECT COUNT(*) FROM {a} q WHERE {mine} AND q.status = %(submitted)s) AS n_submitted,
  (SELECT COUNT(*) FROM {a} q WHERE {mine} AND q.position < %(position)s) AS n_before,
  (SELECT q.handle FROM {a} q WHERE {mine} AND q.position < %(position)s
     ORDER BY q.position DESC LIMIT 1) AS previous_handle,
  (SELECT q.handle FROM {a} q WHERE {mine} AND q.position > %(position)s
     ORDER BY q.position LIMIT 1) AS next_handle,
  {moving_on} AS next_unfinished,
  (SELECT COUNT(*) FROM {a} q JOIN {i} c ON c.id = q.item_id WHERE {copies}) AS n_copies,
  (SELECT COUNT(*) FROM {a} q JOIN {i} c ON c.id = q.item_id WHERE {copies}
     AND (q.position < %(position)s OR (q.position = %(position)s AND q.handle < %(handle)s)))
     AS copies_before
"""


def _position_sql() -> str:
    who = "q.study_id = %(study)s AND q.clinician_id = %(clinician)s"
    mine = f"{who} AND q.status <> %(withdrawn)s"
    return _POSITION_SQL.format(
        a=Assignment._meta.db_table,
        i=Item._meta.db_table,
        mine=mine,
        moving_on=moving_on_sql(
            study="%(study)s", clinician="%(clinician)s", position="%(position)s", current="%(id)s"
        ),
        # Withdrawn copies keep their letter (case_copy), so they count here.
        copies=f"{who} AND c.external_id = %(external_id)s",
    )


def queue_position(*, assignment: Assignment) -> QueuePosition:
    """Where an assignment sits in its clinician's queue, and which copy of its case it is,
    in one query: the rating page is the hot path under load. `assignment.item` is read
    for its external id (loaded with it by the page's and the API's selectors)."""
    params = {
        "study": assignment.study_id,
        "clinician": assignment.clinician_id,
        "position": assignment.position,
        "handle": assignment.handle,
        "id": assignment.pk,
        "external_id": assignment.item.external_id,
        "submitted": Assignment.Status.SUBMITTED,
        "withdrawn": Assignment.Status.WITHDRAWN,
    }
    with connection.cursor() as cursor:
        cursor.execute(_position_sql(), params)
        row = cursor.fetchone()
    total, submitted, before, previous, following, next_unfinished, copies, copy_index = row
    return QueuePosition(
        index=before + 1,
        total=total,
        submitted=submitted,
        previous=previous,
        next=following,
        next_unfinished=next_unfinished,
        copy=CaseCopy(letter=copy_letter(copy_index), count=copies) if copies > 1 else None,
    )
