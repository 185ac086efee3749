"""Every page and API endpoint that exists, against every role: allowed, 403 or 404.

404 where a user may not know the study (or assignment) exists; 403 where they may see it but
not do this; 302 to the login page (pages) or 401 (API) for anonymous users.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from annotation.models import Assignment
from delphi import services as delphi_services
from delphi.exports import EXPORT_NAMES
from delphi.models import Suggestion
from medhelm_site.accounts.services import create_token
from tests.delphi.flow import BASE_URL, PanelStudy, make_panel_study
from tests.factories import TEST_PASSWORD, UserFactory
from tests.support.published_tasks import tasks_published

ROLES = ["coordinator", "clinician", "researcher", "outsider", "staff", "anonymous"]
COLUMNS = ("coordinator", "clinician", "researcher", "outsider", "staff", "anonymous")

# (url, expected status per role in COLUMNS order). {study}: the study; {missing}: no such
# study; {assignment}: the clinician's own assignment; {other_assignment}: someone else's.
# fmt: off
READS = [
    ("/",                                       (200, 200, 200, 200, 200, 302)),
    ("/studies/{study}/",                       (200, 403, 200, 404, 404, 302)),
    ("/studies/{study}/queue/",                 (403, 200, 403, 404, 404, 302)),
    ("/studies/{missing}/",                     (404, 404, 404, 404, 404, 302)),
    ("/studies/{missing}/queue/",               (404, 404, 404, 404, 404, 302)),
    ("/studies/new/",                           (403, 403, 403, 403, 200, 302)),
    ("/studies/{study}/settings/",              (200, 403, 403, 404, 404, 302)),
    ("/studies/{study}/members/",               (200, 403, 403, 404, 404, 302)),
    ("/studies/{study}/import/",                (200, 403, 403, 404, 404, 302)),
    ("/studies/{study}/sample/",                (200, 403, 403, 404, 404, 302)),
    ("/studies/{study}/checks/",                (200, 403, 403, 404, 404, 302)),
    ("/studies/{study}/export/attention-checks.csv", (200, 403, 200, 404, 404, 302)),
    ("/studies/{study}/calibration/",           (200, 403, 403, 404, 404, 302)),
    ("/studies/{study}/calibration/mine/",      (403, 200, 403, 404, 404, 302)),
    ("/studies/{study}/export/ratings.csv",     (200, 403, 200, 404, 404, 302)),
    ("/studies/{study}/export/ratings.json",    (200, 403, 200, 404, 404, 302)),
    ("/studies/{study}/rate/",                  (403, 302, 403, 404, 404, 302)),
    ("/studies/{study}/rate/{assignment}/",     (403, 200, 403, 404, 404, 302)),
    ("/studies/{study}/rate/{other_assignment}/", (403, 404, 403, 404, 404, 302)),
    ("/studies/{study}/jury/",                  (200, 403, 200, 404, 404, 302)),
    ("/studies/{study}/jury/prompt/",           (200, 403, 200, 404, 404, 302)),
    ("/studies/{missing}/jury/",                (404, 404, 404, 404, 404, 302)),
    ("/studies/{study}/agreement/",             (200, 403, 200, 404, 404, 302)),
    ("/studies/{missing}/agreement/",           (404, 404, 404, 404, 404, 302)),
    ("/api/studies/{study}/agreement/reports/", (200, 403, 200, 404, 404, 401)),
    ("/api/studies/",                           (200, 200, 200, 200, 200, 401)),
    ("/api/studies/{study}/",                   (200, 200, 200, 404, 404, 401)),
    ("/api/studies/{missing}/",                 (404, 404, 404, 404, 404, 401)),
    ("/api/studies/{study}/queue/",             (403, 200, 403, 404, 404, 401)),
    ("/api/studies/{study}/criteria/",          (200, 200, 200, 404, 404, 401)),
    ("/api/studies/{study}/items/",             (200, 403, 403, 404, 404, 401)),
    ("/api/studies/{study}/ratings/",           (200, 403, 200, 404, 404, 401)),
    ("/api/assignments/{assignment}/",          (404, 200, 404, 404, 404, 401)),
    ("/api/assignments/{other_assignment}/",    (404, 404, 404, 404, 404, 401)),
    ("/api/schema/",                            (200, 200, 200, 200, 200, 401)),
    ("/admin/",                                 (302, 302, 302, 302, 200, 302)),
    ("/accounts/password/change/",              (200, 200, 200, 200, 200, 302)),
    ("/accounts/login/",                        (200, 200, 200, 200, 200, 200)),
    ("/accounts/password/reset/",               (200, 200, 200, 200, 200, 200)),
]

# (method, url, payload, expected per role). Each case runs on a fresh study.
WRITES = [
    ("post", "/studies/{study}/lock/", {"locked": "0"},                             (302, 403, 403, 404, 404, 302)),
    ("post", "/studies/{study}/assign/", {},                                        (302, 403, 403, 404, 404, 302)),
    ("post", "/studies/{study}/watch/refresh/", {},                                 (302, 403, 403, 404, 404, 302)),
    ("post", "/studies/{study}/checks/", {"action": "unmark", "item": "1"},         (302, 403, 403, 404, 404, 302)),
    ("post", "/studies/{study}/calibration/", {"action": "unmark", "item": "1"},    (302, 403, 403, 404, 404, 302)),
    ("post", "/studies/{study}/members/", {"action": "add", "username": "x", "role": "clinician"},
                                                                                    (200, 403, 403, 404, 404, 302)),
    ("post", "/studies/{study}/rate/{assignment}/", {"c-accuracy": "3", "c-completeness": "3", "c-clarity": "3"},
                                                                                    (403, 302, 403, 404, 404, 302)),
    ("post", "/api/studies/{study}/lock/", {"locked": False},                       (200, 403, 403, 404, 404, 401)),
    ("post", "/api/studies/{study}/members/", {"username": "nobody", "role": "clinician"},
                                                                                    (400, 403, 403, 404, 404, 401)),
    ("put", "/api/assignments/{assignment}/draft/", {"answers": {"accuracy": {"value": 2}}},
                                                                                    (404, 200, 404, 404, 404, 401)),
    ("post", "/api/assignments/{assignment}/submit/",
     {"answers": {"accuracy": {"value": 2}, "completeness": {"value": 2}, "clarity": {"value": 2}}},
                                                                                    (404, 200, 404, 404, 404, 401)),
    ("post", "/api/assignments/{assignment}/flag/", {"flagged": True, "reason": "r"},
                                                                                    (404, 200, 404, 404, 404, 401)),
]
# fmt: on


def _user_for(role: str, setup):
    return {
        "coordinator": setup.coordinator,
        "clinician": setup.clinicians[0],
        "researcher": setup.researcher,
        "outsider": setup.outsider,
        "staff": UserFactory(username="site-admin", is_staff=True, is_superuser=True),
        "anonymous": None,
    }[role]


def _path(url: str, setup) -> str:
    mine = Assignment.objects.filter(clinician=setup.clinicians[0]).first()
    other = (
        Assignment.objects.exclude(clinician=setup.clinicians[0]).exclude(item=mine.item).first()
    )
    return url.format(
        study=setup.study.pk,
        missing=setup.study.pk + 999,
        assignment=mine.handle,
        other_assignment=other.handle,
    )


@pytest.mark.django_db
@pytest.mark.parametrize("url,expected", READS, ids=[row[0] for row in READS])
@pytest.mark.parametrize("role", ROLES)
def test_role_gets_expected_status(
    client, study_with_members, url, expected, role, django_capture_on_commit_callbacks
):
    user = _user_for(role, study_with_members)
    if user is not None:
        assert client.login(username=user.username, password=TEST_PASSWORD)
    path = _path(url, study_with_members)
    # a GET starts no work: a link opened cross-site (SameSite=Lax) must not queue a job
    with tasks_published() as sent, django_capture_on_commit_callbacks(execute=True):
        response = client.get(path)
    assert sent == [], f"{role} GET {path} sent {sent}"
    want = expected[COLUMNS.index(role)]
    assert response.status_code == want, f"{role} GET {path}"
    if want == 302 and role == "anonymous" and not path.startswith("/admin/"):
        assert response["Location"].startswith("/accounts/login/")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "method,url,payload,expected", WRITES, ids=[f"{w[0]} {w[1]}" for w in WRITES]
)
@pytest.mark.parametrize("role", ROLES)
def test_role_may_write_or_not(client, study_with_members, method, url, payload, expected, role):
    user = _user_for(role, study_with_members)
    if user is not None:
        client.force_login(user)
    path = _path(url, study_with_members)
    kwargs = {"content_type": "application/json"} if path.startswith("/api/") else {}
    response = getattr(client, method)(path, payload, **kwargs)
    want = expected[COLUMNS.index(role)]
    assert response.status_code == want, (
        f"{role} {method.upper()} {path}: {response.content[:300]!r}"
    )


@pytest.mark.django_db
def test_token_authentication_reaches_the_same_rules(client, study_with_members):
    study_id = study_with_members.study.pk
    url = f"/api/studies/{study_id}/queue/"
    _, token = create_token(user=study_with_members.clinicians[0])
    assert client.get(url, HTTP_AUTHORIZATION=f"Token {token}").status_code == 200
    _, other = create_token(user=study_with_members.outsider)
    assert client.get(url, HTTP_AUTHORIZATION=f"Token {other}").status_code == 404
    assert client.get(url, HTTP_AUTHORIZATION="Token not-a-token").status_code == 401


@pytest.mark.django_db
def test_outsider_lists_no_study(client, study_with_members):
    client.login(username=study_with_members.outsider.username, password=TEST_PASSWORD)
    assert client.get("/api/studies/").json()["results"] == []


# --------------------------------------------------------------------------- Delphi studies
# A Delphi study has its own roles: its coordinator, a joined panelist, an outsider, a staff
# user who is neither (404: staff administer the site, not every study) and anonymous.
DELPHI_ROLES = ["coordinator", "panelist", "outsider", "staff", "anonymous"]
DELPHI_COLUMNS = ("coordinator", "panelist", "outsider", "staff", "anonymous")
COORDINATOR_ONLY = (200, 403, 404, 404, 302)
COORDINATOR_POST = (302, 403, 404, 404, 302)

# {delphi}: a locked study with round 1 open; {missing}: no such study; {export}: every
# export name; {panelist}: the joined panelist; {suggestion}: their round-1 suggestion.
# fmt: off
DELPHI_READS = [
    ("/delphi/new/",                            (403, 403, 403, 200, 302)),
    ("/delphi/{delphi}/",                       COORDINATOR_ONLY),
    ("/delphi/{delphi}/protocol/",              COORDINATOR_ONLY),
    ("/delphi/{delphi}/panel/",                 COORDINATOR_ONLY),
    ("/delphi/{delphi}/rounds/1/",              COORDINATOR_ONLY),
    ("/delphi/{delphi}/rounds/2/",              (404, 403, 404, 404, 302)),
    ("/delphi/{delphi}/export/nothing.csv",     (404, 403, 404, 404, 302)),
    ("/delphi/{missing}/",                      (404, 404, 404, 404, 302)),
    ("/delphi/{missing}/rounds/1/",             (404, 404, 404, 404, 302)),
    ("/delphi/{delphi}/round/",                 (403, 200, 404, 404, 302)),
    *[(f"/delphi/{{delphi}}/export/{name}",     COORDINATOR_ONLY) for name in EXPORT_NAMES],
]

DELPHI_WRITES = [
    ("/delphi/new/", {"title": "New", "taxonomy_source": "fixture"},   (403, 403, 403, 302, 302)),
    ("/delphi/{delphi}/protocol/", {"title": "Renamed"},                COORDINATOR_POST),
    ("/delphi/{delphi}/protocol/taxonomy/", {"taxonomy_source": "fixture"}, COORDINATOR_POST),
    ("/delphi/{delphi}/protocol/lock/", {"confirm": "yes"},             COORDINATOR_POST),
    ("/delphi/{delphi}/panel/", {"email": "new@example.org"},           COORDINATOR_POST),
    ("/delphi/{delphi}/panel/{panelist}/renew/", {},                    COORDINATOR_POST),
    ("/delphi/{delphi}/panel/{panelist}/withdraw/", {"reason": "r"},    COORDINATOR_POST),
    ("/delphi/{delphi}/rounds/1/open/", {},                             COORDINATOR_POST),
    ("/delphi/{delphi}/rounds/1/remind/", {},                           COORDINATOR_POST),
    ("/delphi/{delphi}/rounds/1/close/", {},                            COORDINATOR_POST),
    ("/delphi/{delphi}/rounds/1/analyse/", {},                          COORDINATOR_POST),
    ("/delphi/{delphi}/rounds/1/feedback/", {},                         COORDINATOR_POST),
    ("/delphi/{delphi}/rounds/1/suggestions/{suggestion}/triage/", {"decision": "reject", "reason": "r"},
                                                                        COORDINATOR_POST),
    ("/delphi/{delphi}/rounds/next/", {},                               COORDINATOR_POST),
    ("/delphi/{delphi}/finish/", {"reason": "r"},                       COORDINATOR_POST),
    ("/delphi/{delphi}/release/", {"name": "Released"},                 COORDINATOR_POST),
]
# fmt: on


@dataclass
class DelphiRoles:
    built: PanelStudy
    suggestion: Suggestion


@pytest.fixture
def delphi_roles(db) -> DelphiRoles:
    built = make_panel_study(n_panelists=1)
    round1 = built.round(1)
    delphi_services.open_round(round_=round1, actor=built.coordinator, base_url=BASE_URL)
    suggestion = delphi_services.add_suggestion(
        panelist=built.panelists[0],
        round_=round1,
        kind="delete",
        text="Out of scope.",
        target_identity=round1.items.first().identity,
    )
    return DelphiRoles(built=built, suggestion=suggestion)


def _delphi_user(role: str, roles: DelphiRoles):
    return {
        "coordinator": roles.built.coordinator,
        "panelist": roles.built.panelists[0].user,
        "outsider": UserFactory(username="delphi-outsider"),
        "staff": UserFactory(username="site-admin", is_staff=True, is_superuser=True),
        "anonymous": None,
    }[role]


def _delphi_path(url: str, roles: DelphiRoles) -> str:
    study = roles.built.study
    return url.format(
        delphi=study.pk,
        missing=study.pk + 999,
        panelist=roles.built.panelists[0].pk,
        suggestion=roles.suggestion.pk,
    )


@pytest.mark.django_db
@pytest.mark.parametrize("url,expected", DELPHI_READS, ids=[row[0] for row in DELPHI_READS])
@pytest.mark.parametrize("role", DELPHI_ROLES)
def test_delphi_role_gets_expected_status(
    client, delphi_roles, url, expected, role, django_capture_on_commit_callbacks
):
    user = _delphi_user(role, delphi_roles)
    if user is not None:
        client.force_login(user)
    path = _delphi_path(url, delphi_roles)
    with tasks_published() as sent, django_capture_on_commit_callbacks(execute=True):
        response = client.get(path)
    assert sent == [], f"{role} GET {path} sent {sent}"
    want = expected[DELPHI_COLUMNS.index(role)]
    assert response.status_code == want, f"{role} GET {path}: {response.content[:300]!r}"
    if role == "anonymous":
        assert response["Location"].startswith("/accounts/login/")


@pytest.mark.django_db
@pytest.mark.parametrize(
    "url,payload,expected", DELPHI_WRITES, ids=[f"post {w[0]}" for w in DELPHI_WRITES]
)
@pytest.mark.parametrize("role", DELPHI_ROLES)
def test_delphi_role_may_act_or_not(client, delphi_roles, url, payload, expected, role):
    user = _delphi_user(role, delphi_roles)
    if user is not None:
        client.force_login(user)
    path = _delphi_path(url, delphi_roles)
    response = client.post(path, payload)
    want = expected[DELPHI_COLUMNS.index(role)]
    assert response.status_code == want, f"{role} POST {path}: {response.content[:300]!r}"
    if role == "anonymous":
        assert response["Location"].startswith("/accounts/login/")


@pytest.mark.django_db
def test_delphi_posts_need_the_csrf_token(delphi_roles):
    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    client.force_login(delphi_roles.built.coordinator)
    study = delphi_roles.built.study
    assert client.post(f"/delphi/{study.pk}/rounds/1/close/").status_code == 403
    assert study.rounds.get(number=1).status == "open"
