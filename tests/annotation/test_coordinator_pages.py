"""The coordinator's pages: create and edit a study, members, lock, exports."""

from __future__ import annotations

import csv
import io

import pytest
from django.contrib.auth.models import Permission

from annotation import services
from annotation.models import Assignment, AuditEvent, RatingStudy, StudyMembership
from tests.factories import FULL_ANSWERS, UserFactory, make_study_with_members

A = services.CriterionAnswer


def criteria_post(rows):
    data = {
        "criteria-TOTAL_FORMS": str(len(rows)),
        "criteria-INITIAL_FORMS": "0",
        "criteria-MIN_NUM_FORMS": "1",
        "criteria-MAX_NUM_FORMS": "1000",
    }
    for i, row in enumerate(rows):
        for k, v in row.items():
            data[f"criteria-{i}-{k}"] = v
    return data


@pytest.mark.django_db
def test_creating_a_study_needs_the_permission_and_makes_the_creator_coordinator(client):
    user = UserFactory()
    client.force_login(user)
    assert client.get("/studies/new/").status_code == 403
    user.user_permissions.add(Permission.objects.get(codename="add_ratingstudy"))
    page = client.get("/studies/new/")
    assert (
        page.status_code == 200 and "Factual correctness" in page.content.decode()
    )  # MedHELM rubric prefilled
    data = {
        "name": "Discharge notes",
        "instructions": "Rate it.",
        "ratings_per_item": "3",
        "show_reference": "on",
        **criteria_post(
            [
                {
                    "key": "safety",
                    "label": "Safety",
                    "scale_min": "1",
                    "scale_max": "4",
                    "anchors": "1=Unsafe\n4=Safe",
                },
                {
                    "key": "clarity",
                    "label": "Clarity",
                    "scale_min": "1",
                    "scale_max": "5",
                    "anchors": "",
                    "allow_cannot_assess": "on",
                },
            ]
        ),
    }
    response = client.post("/studies/new/", data)
    study = RatingStudy.objects.get(name="Discharge notes")
    assert response.status_code == 302 and response["Location"] == f"/studies/{study.pk}/"
    assert study.ratings_per_item == 3
    crit = {c.key: c for c in study.criteria.all()}
    assert crit["safety"].anchors == {"1": "Unsafe", "4": "Safe"} and crit["safety"].scale_max == 4
    assert crit["clarity"].allow_cannot_assess
    assert StudyMembership.objects.filter(study=study, user=user, role="coordinator").exists()


@pytest.mark.django_db
def test_bad_rubric_input_is_named_and_creates_nothing(client):
    user = UserFactory()
    user.user_permissions.add(Permission.objects.get(codename="add_ratingstudy"))
    client.force_login(user)
    data = {
        "name": "Broken",
        "ratings_per_item": "2",
        **criteria_post(
            [{"key": "acc", "label": "Acc", "scale_min": "5", "scale_max": "1", "anchors": "oops"}]
        ),
    }
    response = client.post("/studies/new/", data)
    body = response.content.decode()
    assert response.status_code == 200
    assert "write &quot;point=text&quot;" in body
    assert not RatingStudy.objects.filter(name="Broken").exists()
    data = {**data, "criteria-0-anchors": ""}
    body = client.post("/studies/new/", data).content.decode()
    assert "scale_min &lt; scale_max" in body
    assert not RatingStudy.objects.filter(name="Broken").exists()


@pytest.mark.django_db
def test_members_page_adds_and_removes_clinicians_with_rebalancing(client):
    setup = make_study_with_members(n_items=10, n_clinicians=2, k=2)
    client.force_login(setup.coordinator)
    newcomer = UserFactory(email="new.doc@example.org")
    response = client.post(
        f"/studies/{setup.study.pk}/members/",
        {"action": "add", "username": "new.doc@example.org", "role": "clinician"},
    )
    assert response.status_code == 302
    m = StudyMembership.objects.get(study=setup.study, user=newcomer)
    assert m.pseudonym == "R03" and Assignment.objects.filter(clinician=newcomer).exists()
    response = client.post(
        f"/studies/{setup.study.pk}/members/",
        {"action": "add", "username": "nobody", "role": "clinician"},
    )
    assert "No account" in response.content.decode()
    client.post(f"/studies/{setup.study.pk}/members/", {"action": "remove", "membership": m.pk})
    m.refresh_from_db()
    assert not m.is_active
    assert not Assignment.objects.filter(clinician=newcomer).exclude(status="withdrawn").exists()


@pytest.mark.django_db
def test_lock_button_and_audit(client):
    setup = make_study_with_members()
    client.force_login(setup.coordinator)
    client.post(f"/studies/{setup.study.pk}/lock/", {"locked": "1"})
    setup.study.refresh_from_db()
    assert setup.study.is_locked
    client.post(f"/studies/{setup.study.pk}/lock/", {"locked": "0"})
    setup.study.refresh_from_db()
    assert not setup.study.is_locked
    assert (
        AuditEvent.objects.filter(
            action__in=["study.lock", "study.unlock"], actor=setup.coordinator
        ).count()
        == 2
    )
    client.force_login(setup.researcher)
    assert client.post(f"/studies/{setup.study.pk}/lock/", {"locked": "1"}).status_code == 403


@pytest.mark.django_db
def test_csv_export_is_long_format_with_first_or_latest_values(client):
    setup = make_study_with_members(n_items=3, n_clinicians=2, k=2)
    clinician = setup.clinicians[0]
    a = Assignment.objects.filter(clinician=clinician).first()
    services.submit_assignment(
        assignment_id=a.pk, clinician=clinician, answers=FULL_ANSWERS, time_spent_seconds=20
    )
    services.submit_assignment(
        assignment_id=a.pk, clinician=clinician, answers={**FULL_ANSWERS, "clarity": A(value=1)}
    )
    client.force_login(setup.researcher)
    latest = list(
        csv.DictReader(
            io.StringIO(
                b"".join(
                    client.get(f"/studies/{setup.study.pk}/export/ratings.csv").streaming_content
                ).decode()
            )
        )
    )
    first = list(
        csv.DictReader(
            io.StringIO(
                b"".join(
                    client.get(
                        f"/studies/{setup.study.pk}/export/ratings.csv?values=first"
                    ).streaming_content
                ).decode()
            )
        )
    )
    assert len(latest) == len(first) == 3
    by_crit = {r["criterion"]: r for r in latest}
    assert (
        by_crit["clarity"]["value"] == "1"
        and {r["criterion"]: r for r in first}["clarity"]["value"] == "5"
    )
    assert (
        by_crit["clarity"]["rater"] == "R01" and by_crit["clarity"]["time_spent_seconds"] == "20.0"
    )
    assert by_crit["clarity"]["first_submitted_at"] and by_crit["clarity"]["latest_submitted_at"]
    assert clinician.username not in str(latest)
    client.force_login(clinician)
    assert client.get(f"/studies/{setup.study.pk}/export/ratings.csv").status_code == 403


@pytest.mark.django_db
def test_dashboard_shows_progress_gaps_and_flags(client):
    setup = make_study_with_members(n_items=4, n_clinicians=2, k=2)
    clinician = setup.clinicians[0]
    a = Assignment.objects.filter(clinician=clinician).first()
    services.submit_assignment(assignment_id=a.pk, clinician=clinician, answers=FULL_ANSWERS)
    services.flag_assignment(
        assignment_id=a.pk,
        clinician=clinician,
        flagged=True,
        reason="reference contradicts guideline",
    )
    client.force_login(setup.coordinator)
    body = client.get(f"/studies/{setup.study.pk}/").content.decode()
    assert "1 of 8 assignments submitted" in body
    assert "reference contradicts guideline" in body
    assert 'data-testid="short-total">4<' in body
    assert 'data-testid="short-items"' in body and "short-summary" not in body
    client.force_login(setup.researcher)
    body = client.get(f"/studies/{setup.study.pk}/").content.decode()
    assert clinician.username not in body  # researchers see pseudonyms only


@pytest.mark.django_db
def test_before_any_rating_the_items_short_of_k_are_summed_up_not_listed(client):
    setup = make_study_with_members(n_items=6, n_clinicians=2, k=2)
    client.force_login(setup.coordinator)
    body = client.get(f"/studies/{setup.study.pk}/").content.decode()
    assert 'data-testid="short-total">6<' in body
    assert (
        "All 6 items for clinicians await their ratings: none has a submitted rating yet "
        "(12 ratings to come, k = 2 per item)."
    ) in body
    assert 'data-testid="short-items"' not in body
    assert f"/studies/{setup.study.pk}/items/" not in body  # no row links an item yet
    # the first rating makes the list informative: it comes back, fewest ratings first
    clinician = setup.clinicians[0]
    a = Assignment.objects.filter(clinician=clinician).order_by("position").first()
    services.submit_assignment(assignment_id=a.pk, clinician=clinician, answers=FULL_ANSWERS)
    body = client.get(f"/studies/{setup.study.pk}/").content.decode()
    assert 'data-testid="short-items"' in body and "short-summary" not in body
    rows = body[body.index('data-testid="short-items"') :].split("</table>")[0]
    assert rows.count("<tr>") == 7  # the header and the 6 items, none complete yet


@pytest.mark.django_db
def test_a_design_that_cannot_be_built_is_shown_as_a_message(client):
    setup = make_study_with_members(n_items=2, n_clinicians=2, k=2)
    services.update_study(
        study=setup.study, actor=setup.coordinator, changes={"ratings_per_item": 3}
    )
    client.force_login(setup.coordinator)
    response = client.post(f"/studies/{setup.study.pk}/assign/", follow=True)
    assert response.status_code == 200
    assert "k=3 ratings per item needs at least 3 raters" in response.content.decode()


@pytest.mark.django_db
@pytest.mark.parametrize("body", [{}, {"locked": ""}, {"locked": "yes"}])
def test_a_lock_post_without_a_clear_value_is_refused_and_changes_nothing(client, body):
    setup = make_study_with_members()
    services.set_study_lock(study=setup.study, locked=True, actor=setup.coordinator)
    client.force_login(setup.coordinator)
    response = client.post(f"/studies/{setup.study.pk}/lock/", body)
    assert response.status_code == 400
    assert "locked" in response.content.decode()
    setup.study.refresh_from_db()
    assert setup.study.is_locked
