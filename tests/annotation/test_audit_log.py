"""The audit log page and its CSV: who may read which rows, each filter, the export's
quoting of hostile text, pagination and a query count that does not grow with the rows."""

from __future__ import annotations

import csv
import io
from datetime import UTC, datetime

import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from annotation import audit, services
from annotation.models import AuditEvent, StudyMembership
from annotation.views.audit_log import PAGE_SIZE
from tests.factories import UserFactory, make_study_with_members

pytestmark = pytest.mark.django_db

PAGE = reverse("annotation:audit")
CSV = reverse("annotation:audit-export")


def client_of(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def csv_rows(response) -> list[dict[str, str]]:
    body = b"".join(response.streaming_content).decode()
    return list(csv.DictReader(io.StringIO(body)))


@pytest.fixture
def two_studies():
    a = make_study_with_members(n_items=2, n_clinicians=2, k=1, name="Study A")
    b = make_study_with_members(n_items=2, n_clinicians=2, k=1, name="Study B")
    return a, b


def test_a_coordinator_reads_only_the_rows_of_the_studies_they_coordinate(two_studies):
    a, b = two_studies
    rows = csv_rows(client_of(a.coordinator).get(CSV))
    assert rows and {r["study"] for r in rows} == {"Study A"}
    assert len(rows) == AuditEvent.objects.filter(study=a.study).count()
    page = client_of(a.coordinator).get(PAGE)
    assert page.status_code == 200
    assert "Study A" in page.content.decode() and "Study B" not in page.content.decode()
    # Asking for another study's log is refused, on the page and in the export.
    assert client_of(a.coordinator).get(PAGE, {"study": b.study.pk}).status_code == 403
    assert client_of(a.coordinator).get(CSV, {"study": b.study.pk}).status_code == 403


def test_clinicians_researchers_and_outsiders_are_refused(two_studies):
    a, _ = two_studies
    for user in (a.clinicians[0], a.researcher, a.outsider):
        assert client_of(user).get(PAGE).status_code == 403
        assert client_of(user).get(CSV).status_code == 403
        assert client_of(user).get(PAGE, {"study": a.study.pk}).status_code == 403


def test_a_coordinator_who_also_rates_in_a_study_reads_nothing_of_it(two_studies):
    """Old memberships may give a rater the coordinator role too: they act as a clinician
    only (blinded), so that study's log stays closed to them."""
    a, b = two_studies
    rater = a.clinicians[0]
    StudyMembership.objects.create(study=a.study, user=rater, role="coordinator", pseudonym="")
    assert client_of(rater).get(PAGE).status_code == 403
    services.add_member(study=b.study, user=rater, role="coordinator", actor=b.coordinator)
    rows = csv_rows(client_of(rater).get(CSV))
    assert {r["study"] for r in rows} == {"Study B"}


def test_staff_read_every_row_the_site_wide_ones_too(two_studies):
    a, _ = two_studies
    staff = get_user_model().objects.create_user("admin", is_staff=True)
    audit.record(actor=staff, action="token.create", target=staff, after={"token": "x"})
    rows = csv_rows(client_of(staff).get(CSV))
    assert len(rows) == AuditEvent.objects.count()
    assert {r["study"] for r in rows} == {"Study A", "Study B", ""}
    assert client_of(staff).get(PAGE, {"study": a.study.pk}).status_code == 200


def test_the_anonymous_visitor_is_sent_to_log_in():
    response = Client().get(PAGE)
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


# --------------------------------------------------------------------------- filters


@pytest.fixture
def logged():
    """One study whose log has rows by two actors, of two actions, on three days."""
    built = make_study_with_members(n_items=2, n_clinicians=2, k=1, name="Logged")
    AuditEvent.objects.filter(study=built.study).update(at=_day(1))
    other = built.clinicians[0]
    for day, action in ((5, "assignment.flag"), (9, "assignment.unflag")):
        event = audit.record(actor=other, action=action, target=built.study, study=built.study)
        AuditEvent.objects.filter(pk=event.pk).update(at=_day(day))
    return built


def _day(n: int) -> datetime:
    return timezone.make_aware(datetime(2026, 3, n, 12, 0))


def _actions(client, **query) -> list[str]:
    return [r["action"] for r in csv_rows(client.get(CSV, query))]


def test_the_user_filter(logged):
    client = client_of(logged.coordinator)
    rater = logged.clinicians[0]
    assert sorted(_actions(client, user=rater.pk)) == ["assignment.flag", "assignment.unflag"]
    by_coordinator = _actions(client, user=logged.coordinator.pk)
    assert by_coordinator and "assignment.flag" not in by_coordinator


def test_the_action_filter(logged):
    client = client_of(logged.coordinator)
    assert _actions(client, action="assignment.unflag") == ["assignment.unflag"]
    assert _actions(client, action="no.such.action") == []


def test_the_date_range_includes_both_ends(logged):
    client = client_of(logged.coordinator)
    assert _actions(client, since="2026-03-05", until="2026-03-09") == [
        "assignment.unflag",  # newest first
        "assignment.flag",
    ]
    assert _actions(client, since="2026-03-06") == ["assignment.unflag"]
    assert "assignment.flag" not in _actions(client, until="2026-03-04")
    assert _actions(client, until="2026-03-04")  # the rows of day 1


def test_the_study_filter(two_studies):
    a, b = two_studies
    services.add_member(study=b.study, user=a.coordinator, role="coordinator", actor=b.coordinator)
    client = client_of(a.coordinator)
    assert {r["study"] for r in csv_rows(client.get(CSV))} == {"Study A", "Study B"}
    only_b = csv_rows(client.get(CSV, {"study": b.study.pk}))
    assert {r["study"] for r in only_b} == {"Study B"}
    assert len(only_b) == AuditEvent.objects.filter(study=b.study).count()


@pytest.mark.parametrize(
    ("query", "named"),
    [
        ({"since": "yesterday"}, "since"),
        ({"until": "2026-13-01"}, "until"),
        ({"since": "2026-03-09", "until": "2026-03-01"}, "since"),
        ({"study": "abc"}, "study"),
        ({"user": "-1"}, "user"),
    ],
)
def test_bad_filters_answer_400_naming_the_parameter(logged, query, named):
    response = client_of(logged.coordinator).get(PAGE, query)
    assert response.status_code == 400
    assert named in response.content.decode()


# --------------------------------------------------------------------------- the CSV


def test_hostile_text_is_quoted_in_the_csv():
    hostile_name = '=HYPERLINK("http://evil.example/","x")'
    built = make_study_with_members(n_items=1, n_clinicians=1, k=1, name=hostile_name)
    actor = UserFactory(username="@evil")
    services.add_member(study=built.study, user=actor, role="coordinator", actor=built.coordinator)
    audit.record(
        actor=actor,
        action="account.unlock",
        target=built.study,
        study=built.study,
        before={"username": "+SUM(1)"},
    )
    AuditEvent.objects.filter(action="account.unlock").update(target_id="-2+3")
    rows = csv_rows(client_of(built.coordinator).get(CSV, {"action": "account.unlock"}))
    assert len(rows) == 1
    row = rows[0]
    assert row["study"] == "'" + hostile_name
    assert row["actor"] == "'@evil"
    assert row["target_id"] == "'-2+3"
    assert row["before"] == '{"username": "+SUM(1)"}'  # starts with "{": inert


def test_the_csv_holds_every_matching_row_not_one_page(logged):
    for _ in range(PAGE_SIZE + 5):
        audit.record(
            actor=logged.coordinator, action="bulk.test", target=logged.study, study=logged.study
        )
    client = client_of(logged.coordinator)
    assert len(_actions(client, action="bulk.test")) == PAGE_SIZE + 5
    response = client.get(CSV, {"study": logged.study.pk})
    assert response["Content-Disposition"] == (
        f'attachment; filename="study-{logged.study.pk}-audit.csv"'
    )


# --------------------------------------------------------------------------- paging


def _record(built, n: int) -> None:
    AuditEvent.objects.bulk_create(
        AuditEvent(
            actor=built.coordinator,
            study=built.study,
            action="bulk.test",
            target_type="RatingStudy",
            target_id=str(i),
        )
        for i in range(n)
    )


def test_pages_of_fifty_newest_first_keeping_the_filters(logged):
    _record(logged, PAGE_SIZE + 7)
    client = client_of(logged.coordinator)
    first = client.get(PAGE, {"action": "bulk.test"})
    html = first.content.decode()
    assert html.count("<tr>") == PAGE_SIZE + 1  # the header row and one page
    assert f"{PAGE_SIZE + 7} rows; page 1 of 2" in html
    assert "?action=bulk.test&amp;page=2" in html
    second = client.get(PAGE, {"action": "bulk.test", "page": 2}).content.decode()
    assert second.count("<tr>") == 7 + 1
    assert "RatingStudy 0<" in second  # the oldest row on the last page
    # A page past the end shows the last one rather than failing.
    assert client.get(PAGE, {"action": "bulk.test", "page": 99}).status_code == 200


def _queries(client) -> int:
    with CaptureQueriesContext(connection) as ctx:
        assert client.get(PAGE).status_code == 200
    return len(ctx.captured_queries)


def test_the_page_reads_a_fixed_number_of_queries(logged):
    client = client_of(logged.coordinator)
    _queries(client)  # the first request after logging in also writes the session
    few = _queries(client)
    for rater in logged.clinicians:
        for _ in range(10):
            audit.record(actor=rater, action="bulk.test", target=logged.study, study=logged.study)
    _record(logged, 80)
    assert _queries(client) == few


def test_the_dashboard_links_a_coordinator_to_the_study_log(logged):
    dashboard = reverse("annotation:study", kwargs={"study_id": logged.study.pk})
    html = client_of(logged.coordinator).get(dashboard).content.decode()
    assert f'href="{PAGE}?study={logged.study.pk}"' in html
    assert PAGE not in client_of(logged.researcher).get(dashboard).content.decode()


def test_a_rater_shows_with_their_pseudonym(logged):
    rater = logged.clinicians[0]
    pseudonym = StudyMembership.objects.get(study=logged.study, user=rater).pseudonym
    html = client_of(logged.coordinator).get(PAGE, {"user": rater.pk}).content.decode()
    assert f'{rater.get_username()} <span class="tag">{pseudonym}</span>' in html


def test_the_days_are_read_in_the_site_time_zone(logged, settings):
    """An event late on the 9th in New York is on the 9th there, though the 10th in UTC."""
    settings.TIME_ZONE = "America/New_York"
    late = timezone.make_aware(datetime(2026, 3, 9, 23, 30))
    assert late.astimezone(UTC).day == 10
    AuditEvent.objects.filter(action="assignment.unflag").update(at=late)
    client = client_of(logged.coordinator)
    assert _actions(client, since="2026-03-09", until="2026-03-09") == ["assignment.unflag"]
    assert _actions(client, since="2026-03-10") == []
