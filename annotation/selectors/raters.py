"""How a study's clinicians are named wherever raters are shown: by their study pseudonym,
never by a name. A clinician without one (memberships from before pseudonyms, or a rater
whose membership is gone) is shown under one fallback label, the same on every page, export,
report and the agreement watch. Imports only the models, so any selector can use it."""

from __future__ import annotations

from annotation.models import StudyMembership


def unnamed_rater(user_id: int) -> str:
    """The label of a clinician without a pseudonym: their account's number, never a name."""
    return f"clinician-{user_id}"


class ClinicianLabels(dict[int, str]):
    """user id -> label. Index it (labels[user_id]): an id it does not hold gets the
    fallback label too, so no caller writes its own."""

    def __missing__(self, user_id: int) -> str:
        return unnamed_rater(user_id)


def clinician_labels(*, study_id: int) -> ClinicianLabels:
    """The label of each clinician of the study (active or not), by user id. One query."""
    labels = ClinicianLabels()
    for user_id, pseudonym in StudyMembership.objects.filter(
        study_id=study_id, role=StudyMembership.Role.CLINICIAN
    ).values_list("user_id", "pseudonym"):
        labels[user_id] = pseudonym or unnamed_rater(user_id)
    return labels
