"""Reads for a coordinator's page of one item: the item with its model, who rates it, and
the history of its flags (from the audit trail)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from annotation.models import Assignment, AuditEvent, Item, RatingStudy, StudyMembership
from annotation.selectors.raters import ClinicianLabels, clinician_labels

FLAG_ACTIONS = {
    "assignment.flag": "flagged",
    "assignment.unflag": "withdrew the flag",
    "assignment.flag_resolve": "resolved",
}


@dataclass(frozen=True)
class ItemAssignment:
    assignment_id: int
    rater: str
    status: str
    flagged: bool
    flag_reason: str
    resolved_at: datetime | None
    resolved_by: str
    resolution: str

    @property
    def open_flag(self) -> bool:
        return self.flagged and self.resolved_at is None


@dataclass(frozen=True)
class FlagEvent:
    at: datetime
    rater: str
    actor: str
    what: str
    text: str


@dataclass(frozen=True)
class ItemReview:
    item: Item
    submitted: int
    assignments: list[ItemAssignment]
    history: list[FlagEvent]


def study_item(*, study: RatingStudy, item_id: int) -> Item | None:
    return (
        Item.objects.filter(study=study, pk=item_id)
        .select_related("taxonomy_node", "attention_check", "calibration_item")
        .first()
    )


def _names(study: RatingStudy) -> tuple[ClinicianLabels, dict[int, str]]:
    """Clinicians' labels (clinician_labels), and every member's name as a coordinator sees
    it (a clinician's label, the username otherwise)."""
    labels = clinician_labels(study_id=study.pk)
    names: dict[int, str] = {}
    for user_id, username in (
        StudyMembership.objects.filter(study=study)
        .exclude(role=StudyMembership.Role.CLINICIAN)
        .values_list("user_id", "user__username")
    ):
        names.setdefault(user_id, username)
    return labels, {**names, **labels}


def item_review(*, study: RatingStudy, item: Item) -> ItemReview:
    """The item, its assignments (withdrawn ones too, if they carry a flag) and every flag,
    withdrawal and resolution on them, oldest first."""
    labels, names = _names(study)
    assignments = list(
        Assignment.objects.filter(item=item)
        .select_related("flag_resolved_by")
        .order_by("clinician_id")
    )
    rows = [
        ItemAssignment(
            assignment_id=a.pk,
            rater=labels[a.clinician_id],
            status=a.get_status_display(),
            flagged=a.flagged,
            flag_reason=a.flag_reason,
            resolved_at=a.flag_resolved_at,
            resolved_by=a.flag_resolved_by.get_username() if a.flag_resolved_by else "",
            resolution=a.flag_resolution,
        )
        for a in assignments
        if a.status != Assignment.Status.WITHDRAWN or a.flagged
    ]
    rater_of = {str(a.pk): labels[a.clinician_id] for a in assignments}
    events = AuditEvent.objects.filter(
        target_type=Assignment.__name__,
        target_id__in=list(rater_of),
        action__in=list(FLAG_ACTIONS),
    ).order_by("at", "id")
    history = []
    for e in events:
        after = e.after or {}
        text = (
            after.get("note", "")
            if e.action == "assignment.flag_resolve"
            else after.get("reason", "")
        )
        history.append(
            FlagEvent(
                at=e.at,
                rater=rater_of[e.target_id],
                actor=names.get(e.actor_id, "?") if e.actor_id else "?",
                what=FLAG_ACTIONS[e.action],
                text=text or "",
            )
        )
    submitted = sum(1 for a in assignments if a.status == Assignment.Status.SUBMITTED)
    return ItemReview(item=item, submitted=submitted, assignments=rows, history=history)
