"""Writes for study membership: roles, pseudonyms, and the rebalance a clinician's arrival or
departure sets off."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, Q

from annotation import audit
from annotation.errors import AnnotationError
from annotation.models import Assignment, Item, RatingStudy, StudyMembership
from annotation.services.assignment import assign_items

PSEUDONYM_PREFIX = {
    StudyMembership.Role.CLINICIAN: "R",
    StudyMembership.Role.COORDINATOR: "C",
    StudyMembership.Role.RESEARCHER: "S",
}


BLINDING_RULE = (
    "a clinician of a study holds no other role in it: coordinators and researchers see "
    "model names and every clinician's ratings, which raters must not"
)


def role_clash(
    *,
    study: RatingStudy,
    user: AbstractBaseUser,
    role: str,
    active: bool = True,
    ignore: int | None = None,
) -> str | None:
    """Why `user` may not hold `role` (active or not) in `study`, or None if they may.

    The one place of the blinding rule. An active clinician holds no other role, and who has
    ever held another role (even one since removed) has seen model names and never rates
    the study. A former clinician may take another role; from then on they cannot rate
    again. `ignore` is a membership being edited, not counted against itself.
    """
    others = StudyMembership.objects.filter(study=study, user=user)
    if ignore is not None:
        others = others.exclude(pk=ignore)
    name = user.get_username()
    if role == StudyMembership.Role.CLINICIAN:
        if not active:
            return None
        held = others.exclude(role=role).order_by("-is_active", "role").first()
        if held is not None:
            tense = "is" if held.is_active else "was"
            return f"{name} {tense} a {held.role} of this study; {BLINDING_RULE}"
    elif others.filter(role=StudyMembership.Role.CLINICIAN, is_active=True).exists():
        return f"{name} is a clinician of this study; {BLINDING_RULE}"
    return None


def check_role_allowed(
    *,
    study: RatingStudy,
    user: AbstractBaseUser,
    role: str,
    active: bool = True,
    ignore: int | None = None,
) -> None:
    """Raise AnnotationError (field "role") when the blinding rule forbids the membership."""
    reason = role_clash(study=study, user=user, role=role, active=active, ignore=ignore)
    if reason is not None:
        raise AnnotationError(reason, field="role")


def acting_roles(roles: set[str]) -> set[str]:
    """The roles a user may act in, from the active roles they hold in one study.

    Memberships written before the blinding rule may give one user the clinician role and
    another: the clinician role wins (they stay blinded while they rate), and the other
    roles are suspended until a coordinator or site administrator removes one of them.
    """
    if StudyMembership.Role.CLINICIAN in roles:
        return {StudyMembership.Role.CLINICIAN}
    return roles


@transaction.atomic
def add_member(
    *, study: RatingStudy, user: AbstractBaseUser, role: str, actor: AbstractBaseUser | None
) -> StudyMembership:
    """Give a user a role in a study, with a pseudonym stable for the life of the study.

    Adding an existing member again reactivates them and keeps their pseudonym. A clinician
    holds no other role in the study (`role_clash`): that is refused, naming the clash.
    """
    if role not in StudyMembership.Role.values:
        raise AnnotationError(f"unknown role {role!r}", field="role")
    # Membership changes of one study run one at a time: two requests giving one user two
    # roles must not both pass the check.
    RatingStudy.objects.select_for_update().get(pk=study.pk)
    check_role_allowed(study=study, user=user, role=role)
    existing = (
        StudyMembership.objects.select_for_update()
        .filter(study=study, user=user, role=role)
        .first()
    )
    if existing is not None and existing.is_imported:
        raise AnnotationError(
            "an imported rater has no login and takes no part on the site", field="user"
        )
    if existing is not None:
        if not existing.is_active:
            existing.is_active = True
            existing.save(update_fields=["is_active"])
            if role == StudyMembership.Role.CLINICIAN:
                _restore_withdrawn_drafts(study=study, user=user)
            audit.record(actor=actor, action="membership.reactivate", target=existing, study=study)
            _rebalance_if_assigned(study=study, role=role, actor=actor)
        return existing
    membership = StudyMembership.objects.create(
        study=study, user=user, role=role, pseudonym=_free_pseudonym(study, role)
    )
    audit.record(
        actor=actor,
        action="membership.add",
        target=membership,
        study=study,
        after={"user_id": user.pk, "role": role, "pseudonym": membership.pseudonym},
    )
    _rebalance_if_assigned(study=study, role=role, actor=actor)
    return membership


def _free_pseudonym(study: RatingStudy, role: str) -> str:
    """The role's next pseudonym (R01, R02, ...) that no member holds: imported raters keep
    the pseudonyms of their file, which may be of the same form."""
    prefix = PSEUDONYM_PREFIX[role]
    n = StudyMembership.objects.filter(study=study, role=role, is_imported=False).count() + 1
    held = set(StudyMembership.objects.filter(study=study).values_list("pseudonym", flat=True))
    while f"{prefix}{n:02d}" in held:
        n += 1
    return f"{prefix}{n:02d}"


def _restore_withdrawn_drafts(*, study: RatingStudy, user: AbstractBaseUser) -> None:
    """A returning clinician gets back the drafts they left, where the item still lacks raters."""
    k = study.ratings_per_item
    active = Count("assignments", filter=~Q(assignments__status=Assignment.Status.WITHDRAWN))
    short = Item.objects.filter(study=study).annotate(n=active).filter(n__lt=k).values("pk")
    Assignment.objects.filter(
        study=study, clinician=user, status=Assignment.Status.WITHDRAWN, item__in=short
    ).update(status=Assignment.Status.IN_PROGRESS)


def _rebalance_if_assigned(
    *, study: RatingStudy, role: str, actor: AbstractBaseUser | None
) -> None:
    """A clinician joining or leaving a study already under way gets a share of unstarted work."""
    if (
        role == StudyMembership.Role.CLINICIAN
        and study.assignments.exists()
        and not study.is_locked
    ):
        assign_items(study=study, actor=actor)


@transaction.atomic
def remove_member(
    *, study: RatingStudy, user: AbstractBaseUser, role: str, actor: AbstractBaseUser
) -> None:
    """Deactivate a member. A clinician's unstarted work is dealt to the others; what they
    started or submitted stays theirs (and counts)."""
    membership = (
        StudyMembership.objects.select_for_update()
        .filter(study=study, user=user, role=role)
        .first()
    )
    if membership is None or not membership.is_active:
        raise AnnotationError("this user does not hold that role in the study", field="member")
    if (
        role == StudyMembership.Role.COORDINATOR
        and not StudyMembership.objects.filter(study=study, role=role, is_active=True)
        .exclude(pk=membership.pk)
        .exists()
    ):
        raise AnnotationError("a study needs at least one coordinator", field="member")
    membership.is_active = False
    membership.save(update_fields=["is_active"])
    audit.record(
        actor=actor,
        action="membership.remove",
        target=membership,
        study=study,
        before={"user_id": user.pk, "role": role, "pseudonym": membership.pseudonym},
    )
    if role == StudyMembership.Role.CLINICIAN:
        # Their submitted ratings stay and count; a draft they will never finish does not.
        Assignment.objects.filter(
            study=study,
            clinician=user,
            status__in=[Assignment.Status.PENDING, Assignment.Status.IN_PROGRESS],
        ).update(status=Assignment.Status.WITHDRAWN)
        _rebalance_if_assigned(study=study, role=role, actor=actor)
