"""A coordinator opens a flagged item (model included), resolves the flag with a note; the
resolution is audited, atomic, for the study's coordinators only, and the rater sees it."""

from __future__ import annotations

import pytest
from django.core.exceptions import PermissionDenied

from annotation import services
from annotation.errors import AnnotationError
from annotation.models import Assignment, AuditEvent, StudyMembership
from tests.factories import FULL_ANSWERS, make_study_with_members


@pytest.fixture
def flagged():
    setup = make_study_with_members(n_items=4, n_clinicians=2, k=2)
    clinician = setup.clinicians[0]
    assignment = Assignment.objects.filter(clinician=clinician).order_by("position").first()
    services.flag_assignment(
        assignment_id=assignment.pk, clinician=clinician, flagged=True, reason="reference is wrong"
    )
    assignment.refresh_from_db()
    return setup, clinician, assignment


def _item_url(setup, assignment):
    return f"/studies/{setup.study.pk}/items/{assignment.item_id}/"


@pytest.mark.django_db
def test_dashboard_rows_name_the_model_and_link_the_item_page(client, flagged):
    setup, _, assignment = flagged
    client.force_login(setup.coordinator)
    body = client.get(f"/studies/{setup.study.pk}/").content.decode()
    flag_table = body[body.index('data-testid="flagged"') :]
    assert assignment.item.model_name in flag_table.split("</table>")[0]
    assert f'href="{_item_url(setup, assignment)}"' in body
    # Items short of k link their item page too (every item is short here), once a rating
    # is in (before that the list is summed up in a line)
    other = setup.clinicians[1]
    first = Assignment.objects.filter(clinician=other).order_by("position").first()
    services.submit_assignment(assignment_id=first.pk, clinician=other, answers=FULL_ANSWERS)
    body = client.get(f"/studies/{setup.study.pk}/").content.decode()
    for item in setup.study.items.all():
        assert f'href="/studies/{setup.study.pk}/items/{item.pk}/"' in body


@pytest.mark.django_db
def test_researchers_see_no_item_links(client, flagged):
    setup, _, assignment = flagged
    client.force_login(setup.researcher)
    body = client.get(f"/studies/{setup.study.pk}/").content.decode()
    assert "/items/" not in body
    assert client.get(_item_url(setup, assignment)).status_code == 403


@pytest.mark.django_db
def test_the_item_page_shows_the_model_and_the_flag_history(client, flagged):
    setup, clinician, assignment = flagged
    client.force_login(setup.coordinator)
    page = client.get(_item_url(setup, assignment))
    body = page.content.decode()
    assert page.status_code == 200
    assert assignment.item.model_name in body and assignment.item.output_text in body
    pseudonym = StudyMembership.objects.get(study=setup.study, user=clinician).pseudonym
    history = body[body.index('data-testid="flag-history"') :].split("</table>")[0]
    assert pseudonym in history and "flagged" in history and "reference is wrong" in history
    assert clinician.username not in history  # a rater is named by pseudonym


@pytest.mark.django_db
def test_a_clinician_never_reaches_the_item_page(client, flagged):
    setup, clinician, assignment = flagged
    client.force_login(clinician)
    url = _item_url(setup, assignment)
    for response in (
        client.get(url),
        client.post(url, {"assignment": assignment.pk, "note": "mine"}),
    ):
        assert response.status_code == 403
        assert assignment.item.model_name not in response.content.decode()
    assignment.refresh_from_db()
    assert assignment.flag_resolved_at is None
    client.force_login(setup.outsider)
    assert client.get(url).status_code == 404


@pytest.mark.django_db
def test_resolving_writes_the_note_and_an_audit_row_and_the_rater_sees_it(client, flagged):
    setup, clinician, assignment = flagged
    updated_at = assignment.updated_at
    client.force_login(setup.coordinator)
    response = client.post(
        _item_url(setup, assignment), {"assignment": assignment.pk, "note": "Reference fixed."}
    )
    assert response.status_code == 302
    assignment.refresh_from_db()
    assert assignment.flag_resolution == "Reference fixed."
    assert assignment.flag_resolved_by == setup.coordinator
    assert assignment.flagged and assignment.flag_reason == "reference is wrong"
    # The rater's answers are versioned by updated_at: a note does not move it.
    assert assignment.updated_at == updated_at
    event = AuditEvent.objects.get(action="assignment.flag_resolve")
    assert (event.actor, event.study, event.target_id) == (
        setup.coordinator,
        setup.study,
        str(assignment.pk),
    )
    assert event.before["resolved"] is False
    assert event.after == {
        "flagged": True,
        "reason": "reference is wrong",
        "resolved": True,
        "note": "Reference fixed.",
    }
    body = client.get(_item_url(setup, assignment)).content.decode()
    assert "Reference fixed." in body and "Resolve flag" not in body
    dashboard = client.get(f"/studies/{setup.study.pk}/").content.decode()
    assert "resolved: Reference fixed." in dashboard
    client.force_login(clinician)
    queue = client.get(f"/studies/{setup.study.pk}/queue/").content.decode()
    assert "flag resolved: Reference fixed." in queue


@pytest.mark.django_db
def test_a_new_flag_reopens_and_clears_the_resolution(flagged):
    setup, clinician, assignment = flagged
    services.resolve_flag(
        study=setup.study, assignment_id=assignment.pk, actor=setup.coordinator, note="ok"
    )
    services.flag_assignment(
        assignment_id=assignment.pk, clinician=clinician, flagged=True, reason="still wrong"
    )
    assignment.refresh_from_db()
    assert assignment.flag_resolved_at is None and assignment.flag_resolution == ""
    services.resolve_flag(
        study=setup.study, assignment_id=assignment.pk, actor=setup.coordinator, note="fixed"
    )
    assert AuditEvent.objects.filter(action="assignment.flag_resolve").count() == 2


@pytest.mark.django_db
@pytest.mark.parametrize("note", ["", "   "])
def test_an_empty_note_is_refused_on_the_page_and_nothing_changes(client, flagged, note):
    setup, _, assignment = flagged
    client.force_login(setup.coordinator)
    response = client.post(
        _item_url(setup, assignment), {"assignment": assignment.pk, "note": note}
    )
    assert response.status_code == 400
    assert "say how the flag was resolved" in response.content.decode()
    assignment.refresh_from_db()
    assert assignment.flag_resolved_at is None
    assert not AuditEvent.objects.filter(action="assignment.flag_resolve").exists()


@pytest.mark.django_db
def test_a_second_resolution_is_refused_naming_the_first(flagged):
    setup, _, assignment = flagged
    services.resolve_flag(
        study=setup.study, assignment_id=assignment.pk, actor=setup.coordinator, note="done"
    )
    with pytest.raises(AnnotationError, match=f"resolved already, by {setup.coordinator.username}"):
        services.resolve_flag(
            study=setup.study, assignment_id=assignment.pk, actor=setup.coordinator, note="again"
        )
    assignment.refresh_from_db()
    assert assignment.flag_resolution == "done"


@pytest.mark.django_db
def test_only_the_studys_coordinators_may_resolve(flagged):
    setup, clinician, assignment = flagged
    other = make_study_with_members(name="Other")
    for actor in (clinician, setup.researcher, setup.outsider, other.coordinator):
        with pytest.raises(PermissionDenied):
            services.resolve_flag(
                study=setup.study, assignment_id=assignment.pk, actor=actor, note="x"
            )
    # A coordinator of another study cannot reach this study's assignment through their own.
    with pytest.raises(AnnotationError, match="no such assignment"):
        services.resolve_flag(
            study=other.study, assignment_id=assignment.pk, actor=other.coordinator, note="x"
        )
    # A rater who also holds a coordinator membership acts as a rater only.
    StudyMembership.objects.create(
        study=setup.study, user=clinician, role=StudyMembership.Role.COORDINATOR
    )
    with pytest.raises(PermissionDenied):
        services.resolve_flag(
            study=setup.study, assignment_id=assignment.pk, actor=clinician, note="x"
        )
    assignment.refresh_from_db()
    assert assignment.flag_resolved_at is None


@pytest.mark.django_db
def test_an_unflagged_assignment_cannot_be_resolved(flagged):
    setup, _, _ = flagged
    unflagged = Assignment.objects.filter(study=setup.study, flagged=False).first()
    with pytest.raises(AnnotationError, match="not flagged"):
        services.resolve_flag(
            study=setup.study, assignment_id=unflagged.pk, actor=setup.coordinator, note="x"
        )


@pytest.mark.django_db
def test_a_failed_audit_write_leaves_the_flag_open(flagged, monkeypatch):
    setup, _, assignment = flagged
    from annotation import audit

    def broken(**kwargs):
        raise RuntimeError("audit table unavailable")

    monkeypatch.setattr(audit, "record", broken)
    with pytest.raises(RuntimeError):
        services.resolve_flag(
            study=setup.study, assignment_id=assignment.pk, actor=setup.coordinator, note="x"
        )
    assignment.refresh_from_db()
    assert assignment.flag_resolved_at is None and assignment.flag_resolution == ""


@pytest.mark.django_db
def test_an_item_of_another_study_is_not_found(client, flagged):
    setup, _, _ = flagged
    other = make_study_with_members(name="Other")
    item = other.study.items.first()
    client.force_login(setup.coordinator)
    assert client.get(f"/studies/{setup.study.pk}/items/{item.pk}/").status_code == 404
