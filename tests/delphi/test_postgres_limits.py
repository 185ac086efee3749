"""What PostgreSQL refuses (a NUL character, a name longer than its column) is refused by the
Delphi services on every database, with an error naming the field, and nothing is written.

SQLite stores such text silently; PostgreSQL raises a DataError (a 500). These tests run on
both: `DATABASE_URL=postgres://... pytest tests/delphi/test_postgres_limits.py`.
"""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from delphi import services
from delphi.models import (
    DelphiAuditEvent,
    Panelist,
    Response,
    Suggestion,
    TaxonomyNode,
    TaxonomyVersion,
)
from delphi.services import DelphiError
from medhelm_site.common.text_limits import column_max_length
from tests.delphi.flow import BASE_URL, make_panel_study
from tests.factories import TEST_PASSWORD

User = get_user_model()
NODE_NAME = column_max_length(TaxonomyNode, "name")
VERSION_NAME = column_max_length(TaxonomyVersion, "name")
USERNAME = column_max_length(User, "username")
EMAIL = column_max_length(Panelist, "email")
# A well-formed address, longer than its column.
LONG_EMAIL = "a" * 64 + "@" + "b" * 63 + "." + "c" * 63 + "." + "d" * 63 + ".org"


# --------------------------------------------------------------------------- the panel


@pytest.fixture
def setup_study(db):
    return make_panel_study(n_panelists=0, lock=False)


def _invite(built, email="ann@example.org", **kwargs):
    return services.invite_panelist(
        study=built.study, actor=built.coordinator, email=email, base_url=BASE_URL, **kwargs
    )


@pytest.mark.parametrize(
    ("kwargs", "field", "message"),
    [
        (
            {"email": LONG_EMAIL},
            "email",
            rf"^email: is {len(LONG_EMAIL)} characters long; at most {EMAIL} fit",
        ),
        ({"email": "ann\x00@example.org"}, "email", r"^email: contains a NUL character"),
        (
            {"stakeholder_group": "g" * 101},
            "stakeholder_group",
            r"^stakeholder_group: is 101 characters long",
        ),
        ({"specialty": "cardio\x00logy"}, "specialty", r"^specialty: contains a NUL character"),
    ],
    ids=["email-too-long", "email-nul", "group-too-long", "specialty-nul"],
)
def test_an_invitation_the_database_cannot_store_is_refused(setup_study, kwargs, field, message):
    with pytest.raises(DelphiError, match=message) as raised:
        _invite(setup_study, **kwargs)
    assert raised.value.field == field
    assert not Panelist.objects.filter(study=setup_study.study).exists()
    assert not DelphiAuditEvent.objects.filter(action="panelist.invite").exists()


@pytest.mark.parametrize(
    ("username", "message"),
    [
        (
            "u" * (USERNAME + 1),
            rf"^username: is {USERNAME + 1} characters long; at most {USERNAME}",
        ),
        ("ann\x00", r"^username: contains a NUL character"),
        ("ann smith!", r"^username: Enter a valid username"),
    ],
    ids=["too-long", "nul", "not-a-username"],
)
def test_a_username_the_user_model_refuses_creates_nothing_and_keeps_the_link(
    setup_study, username, message
):
    panelist, token = _invite(setup_study)
    users = User.objects.count()
    with pytest.raises(DelphiError, match=message) as raised:
        services.create_account_and_accept(token=token, username=username, password=TEST_PASSWORD)
    assert raised.value.field == "username"
    assert User.objects.count() == users
    assert services.panelist_for_token(token) == panelist, "the link is not spent"
    longest = "u" * USERNAME
    joined = services.create_account_and_accept(
        token=token, username=longest, password=TEST_PASSWORD
    )
    assert joined.user.username == longest


@pytest.fixture
def round1(db):
    built = make_panel_study(n_panelists=2)
    round_ = built.round(1)
    services.open_round(round_=round_, actor=built.coordinator, base_url=BASE_URL)
    return built, round_


@pytest.mark.parametrize("key", ["comment", "reason"])
def test_an_answer_with_a_nul_saves_nothing_and_keeps_the_draft(round1, key):
    built, round_ = round1
    panelist = built.panelists[0]
    diagnosis, treatment = (round_.items.get(name=n) for n in ("Diagnosis", "Treatment"))
    services.save_answers(
        panelist=panelist,
        round_=round_,
        answers={str(diagnosis.pk): {"rating": 7, "comment": "kept"}},
    )
    with pytest.raises(
        DelphiError, match=rf"^answers\['Treatment'\]\.{key}: contains a NUL character"
    ) as raised:
        services.save_answers(
            panelist=panelist,
            round_=round_,
            answers={
                str(diagnosis.pk): {"rating": 3, "comment": "changed"},
                str(treatment.pk): {"rating": 5, key: "bad\x00"},
            },
        )
    assert raised.value.field == "answers"
    kept = Response.objects.get(panelist=panelist, round_item=diagnosis)
    assert (kept.rating, kept.comment) == (7, "kept")
    assert not Response.objects.filter(round_item=treatment).exists()


@pytest.mark.parametrize(
    ("kind", "details", "text", "field", "message"),
    [
        (
            "rename",
            {"name": "n" * (NODE_NAME + 1)},
            "clearer",
            "name",
            rf"^name: is {NODE_NAME + 1} characters long; at most {NODE_NAME} fit",
        ),
        ("rename", {"name": "Bil\x00ling"}, "clearer", "details", r"^details\.name: contains"),
        ("rename", {"name": "Invoicing"}, "clear\x00er", "text", r"^text: contains a NUL"),
        ("add", {"name": "Coding", "description": "\x00"}, "gap", "details", r"description"),
    ],
    ids=["name-too-long", "nul-name", "nul-rationale", "nul-description"],
)
def test_a_suggestion_the_database_cannot_store_is_refused(
    round1, kind, details, text, field, message
):
    built, round_ = round1
    billing = round_.items.get(name="Billing")
    admin = round_.items.get(name="Administration")
    if kind == "add":
        details = {**details, "kind": "subcategory", "parent_identity": str(admin.identity)}
    with pytest.raises(DelphiError, match=message) as raised:
        services.add_suggestion(
            panelist=built.panelists[0],
            round_=round_,
            kind=kind,
            text=text,
            target_identity=billing.identity,
            details=details,
        )
    assert raised.value.field == field
    assert not Suggestion.objects.exists()


# --------------------------------------------------------------------------- the coordinator


@pytest.mark.django_db
def test_protocol_texts_the_database_cannot_store_are_refused(setup_study):
    study = setup_study.study
    limit = column_max_length(type(study), "title")
    for changes, message in [
        ({"title": "t" * (limit + 1)}, rf"^title: is {limit + 1} characters long"),
        ({"title": "Ti\x00tle"}, r"^title: contains a NUL"),
        ({"aims": "ai\x00ms"}, r"^aims: contains a NUL"),
    ]:
        with pytest.raises(DelphiError, match=message):
            services.update_protocol(study=study, actor=setup_study.coordinator, changes=changes)
    study.refresh_from_db()
    assert (study.title, study.aims) == (
        "Consensus on a small taxonomy",
        "Agree which tasks belong.",
    )
    with pytest.raises(DelphiError, match=r"^username: contains a NUL"):
        services.add_coordinator(study=study, actor=setup_study.coordinator, username="x\x00")


@pytest.mark.django_db
def test_closing_texts_the_database_cannot_store_are_refused():
    built = make_panel_study(n_panelists=2)
    actor = built.coordinator
    round1 = built.round(1)
    services.open_round(round_=round1, actor=actor, base_url=BASE_URL)
    suggestion = services.add_suggestion(
        panelist=built.panelists[0],
        round_=round1,
        kind="delete",
        text="not a task",
        target_identity=round1.items.get(name="Billing").identity,
    )
    services.close_round(round_=round1, actor=actor)
    services.analyse_round(round_=round1, actor=actor)
    services.release_feedback(round_=round1, actor=actor)
    with pytest.raises(DelphiError, match=r"^reason: contains a NUL"):
        services.triage_suggestion(suggestion=suggestion, actor=actor, accept=False, reason="\x00")
    suggestion.refresh_from_db()
    assert suggestion.status == "pending"
    with pytest.raises(DelphiError, match=r"^reason: contains a NUL"):
        services.withdraw_panelist(panelist=built.panelists[1], actor=actor, reason="ill\x00")
    assert Panelist.objects.get(pk=built.panelists[1].pk).withdrawn_at is None

    with pytest.raises(DelphiError, match=r"^reason: contains a NUL"):
        services.finish_study(study=built.study, actor=actor, reason="funding\x00")
    study = services.finish_study(study=built.study, actor=actor, reason="funding ended")
    for name, description, message in [
        ("r" * (VERSION_NAME + 1), "", rf"^name: is {VERSION_NAME + 1} characters long"),
        ("Rel\x00eased", "", r"^name: contains a NUL"),
        ("Released", "\x00", r"^description: contains a NUL"),
    ]:
        with pytest.raises(DelphiError, match=message):
            services.release_taxonomy(study=study, actor=actor, name=name, description=description)
    assert not TaxonomyVersion.objects.filter(status="released", source="delphi").exists()
    study.refresh_from_db()
    assert study.status == "finished"
