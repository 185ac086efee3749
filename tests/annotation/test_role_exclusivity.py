"""A clinician of a study holds no other role in it (issue 14, point 3a).

A coordinator or researcher sees model names and every clinician's ratings (dashboard,
exports, jury, agreement), so one account holding both roles rates unblinded. The rule is
refused by the membership service, so the members page, the members API and the admin all
refuse it with the same message; rows from before the rule do not open the readers' pages
to someone who also rates.
"""

from __future__ import annotations

import pytest
from django.utils.html import escape
from rest_framework.test import APIClient

from annotation import services
from annotation.errors import AnnotationError
from annotation.models import StudyMembership
from annotation.services.membership import BLINDING_RULE
from tests.factories import UserFactory, make_study_with_members

Role = StudyMembership.Role
OTHER_ROLES = [Role.COORDINATOR, Role.RESEARCHER]
# Pages and endpoints that show model names or other clinicians' ratings: researchers and
# coordinators read them, clinicians may not.
READERS_ONLY = [
    "/studies/{study}/",
    "/studies/{study}/export/ratings.csv",
    "/studies/{study}/export/ratings.json",
    "/api/studies/{study}/ratings/",
    "/studies/{study}/jury/",
    "/studies/{study}/agreement/",
    "/api/studies/{study}/agreement/reports/",
]
COORDINATORS_ONLY = [
    "/studies/{study}/members/",
    "/studies/{study}/settings/",
    "/api/studies/{study}/items/",
]


@pytest.fixture
def setup(db):
    return make_study_with_members(n_items=4, n_clinicians=3, k=2)


def _add(setup, user, role):
    return services.add_member(study=setup.study, user=user, role=role, actor=setup.coordinator)


def _memberships(setup, user) -> set[tuple[str, bool]]:
    return set(
        StudyMembership.objects.filter(study=setup.study, user=user).values_list(
            "role", "is_active"
        )
    )


@pytest.mark.parametrize("other", OTHER_ROLES)
def test_a_coordinator_or_researcher_cannot_become_a_clinician(setup, other):
    user = UserFactory(username="dr-two-hats")
    _add(setup, user, other)
    with pytest.raises(AnnotationError) as caught:
        _add(setup, user, Role.CLINICIAN)
    assert caught.value.field == "role"
    assert "dr-two-hats" in caught.value.message and f"is a {other}" in caught.value.message
    assert _memberships(setup, user) == {(other, True)}


@pytest.mark.parametrize("other", OTHER_ROLES)
def test_a_clinician_cannot_become_a_coordinator_or_researcher(setup, other):
    clinician = setup.clinicians[0]
    with pytest.raises(AnnotationError) as caught:
        _add(setup, clinician, other)
    assert caught.value.field == "role"
    assert clinician.username in caught.value.message and "is a clinician" in caught.value.message
    assert _memberships(setup, clinician) == {(Role.CLINICIAN, True)}


def test_the_creator_of_a_study_cannot_also_rate_in_it(setup):
    with pytest.raises(AnnotationError, match="is a coordinator"):
        _add(setup, setup.coordinator, Role.CLINICIAN)


def test_who_has_seen_model_names_stays_out_of_rating_after_leaving(setup):
    """A former coordinator has seen the model names: they can never rate the study."""
    user = UserFactory(username="ex-coordinator")
    _add(setup, user, Role.COORDINATOR)
    services.remove_member(
        study=setup.study, user=user, role=Role.COORDINATOR, actor=setup.coordinator
    )
    with pytest.raises(AnnotationError, match="ex-coordinator was a coordinator"):
        _add(setup, user, Role.CLINICIAN)


def test_a_former_clinician_may_read_but_never_rate_again(setup):
    """A clinician who has left may become a researcher; from then on they have seen what
    raters must not, so they cannot come back as a clinician (not even by reactivation)."""
    leaver = setup.clinicians[1]
    services.remove_member(
        study=setup.study, user=leaver, role=Role.CLINICIAN, actor=setup.coordinator
    )
    _add(setup, leaver, Role.RESEARCHER)
    with pytest.raises(AnnotationError, match=f"{leaver.username} is a researcher"):
        _add(setup, leaver, Role.CLINICIAN)
    assert _memberships(setup, leaver) == {(Role.CLINICIAN, False), (Role.RESEARCHER, True)}


def test_members_page_refuses_with_the_message_on_the_role_field(client, setup):
    client.force_login(setup.coordinator)
    response = client.post(
        f"/studies/{setup.study.pk}/members/",
        {"action": "add", "username": setup.researcher.username, "role": "clinician"},
    )
    assert response.status_code == 200
    errors = response.context["form"].errors
    assert list(errors) == ["role"]
    assert errors["role"] == [
        f"{setup.researcher.username} is a researcher of this study; {BLINDING_RULE}"
    ]
    assert escape(errors["role"][0]) in response.content.decode()
    assert _memberships(setup, setup.researcher) == {(Role.RESEARCHER, True)}


def test_members_api_refuses_with_a_400_naming_the_field(setup):
    api = APIClient()
    api.force_authenticate(setup.coordinator)
    response = api.post(
        f"/api/studies/{setup.study.pk}/members/",
        {"username": setup.clinicians[0].username, "role": "researcher"},
        format="json",
    )
    assert response.status_code == 400
    assert setup.clinicians[0].username in response.json()["role"][0]
    assert _memberships(setup, setup.clinicians[0]) == {(Role.CLINICIAN, True)}


def test_admin_refuses_a_membership_that_breaks_the_rule(client, setup):
    client.force_login(UserFactory(username="site-admin", is_staff=True, is_superuser=True))
    clinician = setup.clinicians[0]
    form = {"study": setup.study.pk, "user": clinician.pk, "pseudonym": "", "is_active": "on"}
    response = client.post(
        "/admin/annotation/studymembership/add/", {**form, "role": "coordinator"}
    )
    assert response.status_code == 200  # the form again, with the error
    assert escape(f"{clinician.username} is a clinician of this study") in response.content.decode()
    assert _memberships(setup, clinician) == {(Role.CLINICIAN, True)}
    # Reactivating the clinician row of a former clinician, now a researcher, is refused too.
    leaver = setup.clinicians[1]
    services.remove_member(
        study=setup.study, user=leaver, role=Role.CLINICIAN, actor=setup.coordinator
    )
    _add(setup, leaver, Role.RESEARCHER)
    row = StudyMembership.objects.get(study=setup.study, user=leaver, role=Role.CLINICIAN)
    response = client.post(
        f"/admin/annotation/studymembership/{row.pk}/change/",
        {"pseudonym": row.pseudonym, "is_active": "on"},
    )
    assert response.status_code == 200
    assert escape(f"{leaver.username} is a researcher") in response.content.decode()
    assert _memberships(setup, leaver) == {(Role.CLINICIAN, False), (Role.RESEARCHER, True)}


@pytest.mark.parametrize("other", OTHER_ROLES)
def test_rows_from_before_the_rule_leave_only_the_clinician_role(client, setup, other):
    """A user already holding both (rows written before the rule) rates on, blinded: the
    pages and exports that show model names or others' ratings answer 403."""
    both = setup.clinicians[0]
    StudyMembership.objects.create(study=setup.study, user=both, role=other, pseudonym="X99")
    client.force_login(both)
    urls = READERS_ONLY + (COORDINATORS_ONLY if other == Role.COORDINATOR else [])
    for url in urls:
        path = url.format(study=setup.study.pk)
        assert client.get(path).status_code == 403, path
    assert client.get(f"/studies/{setup.study.pk}/queue/").status_code == 200
    # ... and the coordinators see the clash on the members page, to resolve it.
    client.force_login(setup.coordinator)
    page = client.get(f"/studies/{setup.study.pk}/members/")
    assert page.context["clashes"] == [
        f"{both.username} is a {other} of this study; {BLINDING_RULE}"
    ]
    assert 'data-testid="role-clash"' in page.content.decode()
