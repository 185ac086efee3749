"""The panel's pages through the Django test client: joining by invitation, the round
questionnaire (feedback, own previous answer, anonymity), the autosave endpoint, submission,
suggestions and rounds that are not open."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from delphi import services
from delphi.models import Panelist, PanelistRound, Response, Round, RoundItem, Suggestion
from tests.delphi.flow import BASE_URL, PanelStudy, make_panel_study
from tests.factories import TEST_PASSWORD, UserFactory

pytestmark = pytest.mark.django_db

# Round 1 answers per panelist (index = panelist): Diagnosis is spread (no consensus, so it is
# rated again and its feedback shows); the first panelist's 2 is theirs alone.
ROUND1 = {
    "Diagnosis": [2, 5, 8, 5, 4, 6],
    "Treatment": [8, 8, 9, 7, 8, 8],
}
DASH = "\u2013"  # the en dash of ranges on the page
COMMENTS = {0: "Too broad as worded", 3: "Overlaps with triage"}


# --------------------------------------------------------------------------- helpers


def client_for(user: Any) -> Client:
    client = Client()
    client.force_login(user)
    return client


def round_url(built: PanelStudy) -> str:
    return reverse("delphi:panel_round", kwargs={"study_id": built.study.pk})


def draft_url(built: PanelStudy) -> str:
    return reverse("delphi:panel_draft", kwargs={"study_id": built.study.pk})


def item(round_: Round, name: str) -> RoundItem:
    return round_.items.get(name=name)


def full_answers(round_: Round, rating: int = 8) -> dict[str, str]:
    """A complete no-JS form post for every item of the round."""
    data = {"comprehensiveness": "4"}
    for round_item in round_.items.all():
        data[f"item-{round_item.pk}-rating"] = str(rating)
        if round_item.kind != "category":
            data[f"item-{round_item.pk}-placement_agrees"] = "yes"
    return data


def answer_round1(built: PanelStudy) -> None:
    round_ = built.round(1)
    for i, panelist in enumerate(built.panelists):
        if panelist.rounds.filter(round=round_, status=PanelistRound.Status.SUBMITTED).exists():
            continue  # submitted through the page already
        answers = {}
        for round_item in round_.items.all():
            rating = ROUND1.get(round_item.name, [8] * 6)[i]
            answers[str(round_item.pk)] = {
                "rating": rating,
                "placement_agrees": True,
                "comment": COMMENTS.get(i, "") if round_item.name == "Diagnosis" else "",
            }
        services.submit_round(
            panelist=panelist, round_=round_, answers=answers, comprehensiveness=4
        )


def advance_to_round2(built: PanelStudy, *, release: bool = True) -> Round:
    """Round 1 answered, closed and analysed; with release, its feedback released and round 2
    drafted and opened."""
    actor = built.coordinator
    round1 = built.round(1)
    answer_round1(built)
    services.close_round(round_=round1, actor=actor)
    services.analyse_round(round_=round1, actor=actor)
    if not release:
        return round1
    services.release_feedback(round_=round1, actor=actor)
    round2 = services.start_next_round(study=built.study, actor=actor)
    return services.open_round(round_=round2, actor=actor, base_url=BASE_URL)


def section(html: str, item_pk: int) -> str:
    """The HTML of one item's section of the questionnaire."""
    match = re.search(
        rf'<section class="q-item[^"]*" id="item-{item_pk}".*?</section>', html, flags=re.S
    )
    assert match, f"no section for item {item_pk}"
    return match.group(0)


def feedback_of(html: str, item_pk: int) -> str:
    match = re.search(
        r'<div class="q-feedback" data-testid="feedback">.*?</details>|'
        r'<div class="q-feedback" data-testid="feedback">.*?data-testid="own-answer">.*?</p>',
        section(html, item_pk),
        flags=re.S,
    )
    assert match, "no feedback section"
    return match.group(0)


@pytest.fixture
def built() -> PanelStudy:
    """Six joined panelists, round 1 open; re-rate all, reasons asked outside the IQR."""
    study = make_panel_study(n_panelists=6, carry_over="rerate_all", ask_reason_outside_iqr=True)
    services.open_round(round_=study.round(1), actor=study.coordinator, base_url=BASE_URL)
    return study


# --------------------------------------------------------------------------- joining


def invite(built: PanelStudy, email: str = "newcomer@example.org") -> tuple[Panelist, str]:
    return services.invite_panelist(
        study=built.study, actor=built.coordinator, email=email, base_url=BASE_URL
    )


def test_logged_in_user_joins_with_one_click_and_the_link_is_spent(built):
    panelist, token = invite(built)
    user = UserFactory(username="dr-newcomer")
    client = client_for(user)
    url = reverse("delphi:join", kwargs={"token": token})

    page = client.get(url)
    assert page.status_code == 200
    text = page.content.decode()
    assert built.study.title in text and built.study.aims in text
    assert "pseudonymous" in text
    assert "Join as dr-newcomer" in text
    assert page.headers["Referrer-Policy"] == "same-origin"

    joined = client.post(url, {"action": "join"})
    assert joined.status_code == 302
    assert joined.url == round_url(built)
    panelist.refresh_from_db()
    assert panelist.user == user
    # Invited while round 1 was open: they answer it too.
    assert client.get(round_url(built)).status_code == 200

    again = client.get(url)
    assert again.status_code == 404
    assert "used already" in again.content.decode()


def test_new_account_is_created_logged_in_and_joined(built):
    panelist, token = invite(built)
    client = Client()
    url = reverse("delphi:join", kwargs={"token": token})
    page = client.get(url).content.decode()
    assert 'name="password2"' in page
    assert f"/accounts/login/?next=/delphi/join/{token}/" in page

    mismatch = client.post(
        url,
        {
            "action": "create",
            "username": "dr-fresh",
            "password1": "a-long-pass-phrase",
            "password2": "another-pass-phrase",
        },
    )
    assert mismatch.status_code == 400
    assert "two passwords differ" in mismatch.content.decode()
    assert 'value="dr-fresh"' in mismatch.content.decode(), "the username is kept"
    assert not Panelist.objects.filter(user__username="dr-fresh").exists()

    weak = client.post(
        url, {"action": "create", "username": "dr-fresh", "password1": "123", "password2": "123"}
    )
    assert weak.status_code == 400
    assert "password:" in weak.content.decode()

    created = client.post(
        url,
        {
            "action": "create",
            "username": "dr-fresh",
            "password1": "a-long-pass-phrase",
            "password2": "a-long-pass-phrase",
        },
    )
    assert created.status_code == 302
    panelist.refresh_from_db()
    assert panelist.user.username == "dr-fresh"
    # Logged in by the join itself.
    assert client.get(round_url(built)).status_code == 200


def test_used_renewed_and_unknown_tokens_get_a_clear_404(built):
    panelist, old = invite(built)
    new = services.renew_invitation(panelist=panelist, actor=built.coordinator, base_url=BASE_URL)
    client = Client()
    for token in (old, "not-a-token"):
        page = client.get(reverse("delphi:join", kwargs={"token": token}))
        assert page.status_code == 404
        assert "ask the study's" in page.content.decode()
    # A POST with a spent token changes nothing.
    client.post(reverse("delphi:join", kwargs={"token": old}), {"action": "create"})
    assert client.get(reverse("delphi:join", kwargs={"token": new})).status_code == 200


def test_join_refusals_are_shown_not_raised(built):
    _, token = invite(built)
    url = reverse("delphi:join", kwargs={"token": token})
    coordinator = client_for(built.coordinator)
    page = coordinator.post(url, {"action": "join"})
    assert page.status_code == 400
    assert "coordinator of the study cannot also be a panelist" in page.content.decode()
    anonymous = Client().post(url, {"action": "join"})
    assert anonymous.status_code == 400
    assert "log in first" in anonymous.content.decode()


# --------------------------------------------------------------------------- the questionnaire


def test_round_one_shows_every_item_indented_with_the_banded_scale(built):
    round1 = built.round(1)
    page = client_for(built.panelists[0].user).get(round_url(built))
    assert page.status_code == 200
    html = page.content.decode()
    names = [m for m in re.findall(r'<h2 class="q-name">([^<]+)</h2>', html)]
    assert names == list(round1.items.order_by("position").values_list("name", flat=True))
    assert 'class="q-item kind-subcategory' in html and 'class="q-item kind-category' in html
    assert "not important / inappropriate" in html and "important / appropriate" in html
    diagnosis = section(html, item(round1, "Diagnosis").pk)
    assert "Does “Diagnosis” belong under “Clinical Decision Support”?" in diagnosis
    assert "Unable to rate" in diagnosis
    assert 'data-testid="feedback"' not in html, "round 1 has no feedback"
    assert 'name="comprehensiveness"' in html
    assert 'id="suggestions"' in html, "round 1 collects suggestions"
    assert 'data-draft-url="/delphi/' in html and "questionnaire.js" in html


def test_feedback_shows_only_once_released(built):
    advance_to_round2(built, release=False)
    client = client_for(built.panelists[0].user)
    page = client.get(round_url(built)).content.decode()
    assert 'data-testid="feedback"' not in page
    assert "Round 1 is analysed" in page

    advance = built.round(1)
    services.release_feedback(round_=advance, actor=built.coordinator)
    page = client.get(round_url(built)).content.decode()
    assert "Round 1 has ended and its feedback is released" in page
    assert 'data-testid="feedback"' not in page, "only with the next round"

    round2 = services.start_next_round(study=built.study, actor=built.coordinator)
    services.open_round(round_=round2, actor=built.coordinator, base_url=BASE_URL)
    html = client.get(round_url(built)).content.decode()
    feedback = feedback_of(html, item(round2, "Diagnosis").pk)
    assert "<svg" in feedback and 'role="img"' in feedback
    # Diagnosis: 2, 5, 8, 5, 4, 6 -> median 5, Q1-Q3 4.25-5.75 (type 7), 1 of 6 rate 7-9.
    assert re.search(r'data-stat="median">5<', feedback)
    assert re.search(rf'data-stat="iqr">4.25{DASH}5.75<', feedback)
    assert re.search(r'data-stat="pct_high">17%<', feedback)
    assert re.search(r'data-stat="pct_low">17%<', feedback)
    assert re.search(r'data-stat="n_rated">6<', feedback)
    assert "Overlaps with triage" in feedback and "Too broad as worded" in feedback
    # Bars coloured by band, counts drawn: two panelists rated 5.
    assert feedback.count("<rect") == 9
    assert re.search(r'<g class="bar band-mid">\s*<rect[^>]*fill="#d9a21b"', feedback)


def test_own_previous_answer_is_shown_to_that_panelist_only(built):
    round2 = advance_to_round2(built)
    diagnosis = item(round2, "Diagnosis").pk
    first = client_for(built.panelists[0].user).get(round_url(built)).content.decode()
    second = client_for(built.panelists[2].user).get(round_url(built)).content.decode()

    mine = feedback_of(first, diagnosis)
    assert "Your answer (only you see this): <strong>2</strong>" in mine
    assert 'class="bar band-low own"' in mine
    assert "your answer: 2" in mine

    theirs = feedback_of(second, diagnosis)
    assert "Your answer (only you see this): <strong>8</strong>" in theirs
    assert 'class="bar band-high own"' in theirs
    # Nothing of the first panelist's own answer reaches the second: no marker on 2, no text.
    assert "<strong>2</strong>" not in theirs
    assert "band-low own" not in theirs
    assert "your answer: 2" not in theirs
    assert theirs.count('own-marker"') == 1


def test_reason_field_outside_the_iqr_and_changed_wording(built):
    round2 = advance_to_round2(built)
    html = client_for(built.panelists[0].user).get(round_url(built)).content.decode()
    diagnosis = section(html, item(round2, "Diagnosis").pk)
    assert 'data-q1="4.25" data-q3="5.75"' in diagnosis
    assert 'name="item-' in diagnosis and "-reason" in diagnosis
    assert f"Q1{DASH}Q3: 4.25{DASH}5.75" in diagnosis
    # A rating outside the IQR without a reason cannot be submitted; the error names the item.
    data = full_answers(round2, rating=8)
    page = client_for(built.panelists[0].user).post(round_url(built), {**data, "action": "submit"})
    assert page.status_code == 400
    text = page.content.decode()
    assert "Diagnosis: your rating 8 is outside the panel&#x27;s IQR (4.25-5.75)" in text
    assert (
        'class="q-item kind-subcategory has-error" id="item-{}"'.format(
            item(round2, "Diagnosis").pk
        )
        in text
    )


def test_changed_items_show_old_wording_struck_and_the_note(built):
    answer_round1(built)
    round1 = built.round(1)
    actor = built.coordinator
    services.close_round(round_=round1, actor=actor)
    services.analyse_round(round_=round1, actor=actor)
    target = item(round1, "Diagnosis")
    suggestion = Suggestion.objects.create(
        round=round1,
        panelist=built.panelists[1],
        kind=Suggestion.Kind.RENAME,
        target_identity=target.identity,
        details={"name": "Diagnosis and triage"},
        text="clearer",
    )
    services.triage_suggestion(
        suggestion=suggestion, actor=actor, accept=True, reason="the panel agreed"
    )
    services.release_feedback(round_=round1, actor=actor)
    round2 = services.start_next_round(study=built.study, actor=actor)
    services.open_round(round_=round2, actor=actor, base_url=BASE_URL)
    html = client_for(built.panelists[0].user).get(round_url(built)).content.decode()
    renamed = section(html, round2.items.get(identity=target.identity).pk)
    assert "<del>Diagnosis</del> <ins>Diagnosis and triage</ins>" in renamed
    assert "Renamed from" in renamed and "the panel agreed" in renamed


# --------------------------------------------------------------------------- anonymity


def test_no_other_panelist_is_named_anywhere_in_the_page(built):
    round2 = advance_to_round2(built)
    me = built.panelists[0]
    html = client_for(me.user).get(round_url(built)).content.decode()
    # CSRF tokens are random letters and digits: leave them out of the search.
    html = re.sub(r'name="csrfmiddlewaretoken" value="[^"]*"', "", html)
    for other in built.panelists[1:]:
        for secret in (other.pseudonym, other.user.username, other.email):
            assert not re.search(rf"\b{re.escape(secret)}\b", html), secret
    assert built.coordinator.username not in html
    assert me.email not in html
    # Individual answers of others: the only ratings shown are counts and statistics; the
    # comments carry no author.
    assert "Overlaps with triage" in html
    assert round2.number == 2


# --------------------------------------------------------------------------- autosave endpoint


def test_draft_endpoint_saves_and_returns_the_version(built):
    round1 = built.round(1)
    panelist = built.panelists[0]
    diagnosis = item(round1, "Diagnosis")
    client = client_for(panelist.user)
    reply = client.post(
        draft_url(built),
        json.dumps(
            {
                "round": 1,
                "answers": {str(diagnosis.pk): {"rating": 7, "comment": "fine"}},
                "comprehensiveness": 3,
            }
        ),
        content_type="application/json",
    )
    assert reply.status_code == 200, reply.content
    data = reply.json()
    saved = Response.objects.get(panelist=panelist, round_item=diagnosis)
    assert (saved.rating, saved.comment, saved.is_draft) == (7, "fine", True)
    assert data["updated_at_ms"] == int(saved.updated_at.timestamp() * 1000)
    assert data["saved_at"]
    assert PanelistRound.objects.get(panelist=panelist, round=round1).comprehensiveness == 3
    # The page carries the same version for the browser's local copy.
    page = client.get(round_url(built)).content.decode()
    assert f'data-updated="{data["updated_at_ms"]}"' in page
    assert re.search(rf'name="item-{diagnosis.pk}-rating" value="7" checked', page), (
        "the draft is rendered"
    )


@pytest.mark.parametrize(
    ("answer", "message"),
    [
        ({"rating": 12}, "answers['Treatment'].rating: must be a whole number 1-9, got 12"),
        ({"rating": 5, "unable": True}, "answers['Treatment']: give a rating or 'unable"),
        ({"placement_agrees": "perhaps"}, "answers['Treatment'].placement_agrees"),
        ({"colour": "red"}, "answers['Treatment']: unknown key(s) ['colour']"),
    ],
)
def test_draft_endpoint_refuses_a_bad_answer_names_the_item_and_saves_nothing(
    built, answer, message
):
    round1 = built.round(1)
    panelist = built.panelists[0]
    good, bad = item(round1, "Diagnosis"), item(round1, "Treatment")
    reply = client_for(panelist.user).post(
        draft_url(built),
        json.dumps({"answers": {str(good.pk): {"rating": 6}, str(bad.pk): answer}}),
        content_type="application/json",
    )
    assert reply.status_code == 400
    assert message in reply.json()["error"]
    assert not Response.objects.filter(panelist=panelist).exists(), "all or nothing"


def test_draft_endpoint_refuses_malformed_requests(built):
    client = client_for(built.panelists[0].user)
    url = draft_url(built)
    assert client.post(url, "{not json", content_type="application/json").status_code == 400
    assert client.post(url, "[1]", content_type="application/json").status_code == 400
    unknown = client.post(url, json.dumps({"answer": {}}), content_type="application/json")
    assert unknown.status_code == 400 and "answer" in unknown.json()["error"]
    no_such = client.post(
        url, json.dumps({"answers": {"999999": {"rating": 5}}}), content_type="application/json"
    )
    assert no_such.status_code == 400 and "no such item in round 1" in no_such.json()["error"]
    stale = client.post(
        url, json.dumps({"round": 2, "answers": {}}), content_type="application/json"
    )
    assert stale.status_code == 409 and "reload the page" in stale.json()["error"]
    assert client.get(url).status_code == 405
    assert Client().post(url, "{}", content_type="application/json").status_code == 401
    outsider = client_for(UserFactory(username="outsider"))
    assert outsider.post(url, "{}", content_type="application/json").status_code == 404
    coordinator = client_for(built.coordinator)
    assert coordinator.post(url, "{}", content_type="application/json").status_code == 403


def test_draft_endpoint_needs_the_csrf_token(built):
    client = Client(enforce_csrf_checks=True)
    client.force_login(built.panelists[0].user)
    refused = client.post(draft_url(built), "{}", content_type="application/json")
    assert refused.status_code == 403
    client.get(round_url(built))  # sets the cookie the page's script reads
    token = client.cookies["csrftoken"].value
    accepted = client.post(
        draft_url(built), "{}", content_type="application/json", HTTP_X_CSRFTOKEN=token
    )
    assert accepted.status_code == 200


# --------------------------------------------------------------------------- no-JS save, submit


def test_save_draft_without_js_keeps_only_touched_items(built):
    round1 = built.round(1)
    panelist = built.panelists[0]
    diagnosis, treatment = item(round1, "Diagnosis"), item(round1, "Treatment")
    reply = client_for(panelist.user).post(
        round_url(built),
        {
            "action": "save",
            f"item-{diagnosis.pk}-rating": "6",
            # A radio cannot be cleared without JS: "unable to rate" wins over it.
            f"item-{treatment.pk}-rating": "3",
            f"item-{treatment.pk}-unable": "1",
        },
    )
    assert reply.status_code == 302
    saved = {r.round_item_id: r for r in Response.objects.filter(panelist=panelist)}
    assert set(saved) == {diagnosis.pk, treatment.pk}
    assert saved[diagnosis.pk].rating == 6
    assert (saved[treatment.pk].rating, saved[treatment.pk].unable_to_rate) == (None, True)


def test_submit_lists_what_is_missing_by_item_and_keeps_the_draft(built):
    round1 = built.round(1)
    panelist = built.panelists[0]
    client = client_for(panelist.user)
    diagnosis = item(round1, "Diagnosis")
    page = client.post(round_url(built), {"action": "submit", f"item-{diagnosis.pk}-rating": "7"})
    assert page.status_code == 400
    text = page.content.decode()
    assert "Not submitted yet" in text
    assert "Treatment: no rating" in text
    assert "Diagnosis: say whether it belongs under its parent" in text
    assert "comprehensiveness of the whole taxonomy: not rated" in text
    assert re.search(rf'name="item-{diagnosis.pk}-rating" value="7" checked', text)
    assert Response.objects.get(panelist=panelist, round_item=diagnosis).rating == 7
    entry = PanelistRound.objects.get(panelist=panelist, round=round1)
    assert entry.status == PanelistRound.Status.STARTED

    done = client.post(round_url(built), {**full_answers(round1), "action": "submit"})
    assert done.status_code == 302
    entry.refresh_from_db()
    assert entry.status == PanelistRound.Status.SUBMITTED
    thanks = client.get(round_url(built)).content.decode()
    assert "Thank you" in thanks and 'id="questionnaire-done"' in thanks
    assert 'data-testid="own-answers"' in thanks
    assert '<form method="post" id="questionnaire"' not in thanks, "read-only"
    assert "belongs under Clinical Decision Support" in thanks
    # Submitted answers are final: the draft endpoint refuses.
    late = client.post(
        draft_url(built),
        json.dumps({"answers": {str(diagnosis.pk): {"rating": 1}}}),
        content_type="application/json",
    )
    assert late.status_code == 400 and "answers are final" in late.json()["error"]


# --------------------------------------------------------------------------- suggestions


def test_suggestions_are_recorded_and_listed_and_refusals_shown(built):
    round1 = built.round(1)
    panelist = built.panelists[0]
    client = client_for(panelist.user)
    url = reverse("delphi:panel_suggest", kwargs={"study_id": built.study.pk})
    billing = item(round1, "Billing")
    admin = item(round1, "Administration")

    refused = client.post(url, {"kind": "rename", "target": str(billing.identity), "name": "x"})
    assert refused.status_code == 400
    assert "needs its rationale" in refused.content.decode()
    assert not Suggestion.objects.exists()

    added = client.post(
        url,
        {
            "kind": "add",
            "name": "Coding",
            "new_kind": "subcategory",
            "parent": str(admin.identity),
            "target": str(billing.identity),  # ignored for an add
            "into": str(billing.identity),  # another kind's field: ignored
            "text": "missing from administration",
        },
    )
    assert added.status_code == 302 and added.url.endswith("#suggestions")
    merged = client.post(
        url,
        {
            "kind": "merge",
            "target": str(billing.identity),
            "into": str(item(round1, "Scheduling").identity),
            "name": "ignored",
            "text": "they overlap",
        },
    )
    assert merged.status_code == 302
    kept = list(Suggestion.objects.order_by("id").values_list("kind", "details"))
    assert kept == [
        ("add", {"name": "Coding", "kind": "subcategory", "parent_identity": str(admin.identity)}),
        ("merge", {"into_identity": str(item(round1, "Scheduling").identity)}),
    ]
    page = client.get(round_url(built)).content.decode()
    listed = page[page.index('data-testid="own-suggestions"') :]
    assert "add the subcategory “Coding” under Administration" in listed
    assert "merge into Scheduling" in listed
    # Another panelist does not see them.
    other = client_for(built.panelists[1].user).get(round_url(built)).content.decode()
    assert "Coding" not in other


# --------------------------------------------------------------------------- not open


def test_a_round_that_is_not_open_shows_its_status(built):
    client = client_for(built.panelists[0].user)
    services.close_round(round_=built.round(1), actor=built.coordinator)
    page = client.get(round_url(built))
    assert page.status_code == 200
    assert "Round 1 is closed" in page.content.decode()
    assert 'id="questionnaire"' not in page.content.decode()
    # A form posted after the round closed is answered, not a 500.
    late = client.post(round_url(built), {"action": "save"})
    assert late.status_code == 409
    assert "not saved" in late.content.decode()
    draft = client.post(draft_url(built), "{}", content_type="application/json")
    assert draft.status_code == 400 and "round 1 is closed, not open" in draft.json()["error"]


def test_before_the_first_round_opens(db):
    built = make_panel_study(n_panelists=2)
    page = client_for(built.panelists[0].user).get(round_url(built))
    assert page.status_code == 200
    assert "No round has opened yet" in page.content.decode()


def test_access_outsiders_404_coordinators_403_anonymous_to_login(built):
    url = round_url(built)
    assert client_for(UserFactory(username="outsider")).get(url).status_code == 404
    assert client_for(built.coordinator).get(url).status_code == 403
    anonymous = Client().get(url)
    assert anonymous.status_code == 302 and "/accounts/login/" in anonymous.url
    withdrawn = built.panelists[5]
    services.withdraw_panelist(panelist=withdrawn, actor=built.coordinator)
    assert client_for(withdrawn.user).get(url).status_code == 404


def test_login_then_back_to_the_invitation(built):
    _, token = invite(built)
    UserFactory(username="dr-returning")
    join_url = reverse("delphi:join", kwargs={"token": token})
    client = Client()
    logged_in = client.post(
        "/accounts/login/",
        {"username": "dr-returning", "password": TEST_PASSWORD, "next": join_url},
    )
    assert logged_in.status_code == 302 and logged_in.url == join_url
    assert "Join as dr-returning" in client.get(join_url).content.decode()


def test_no_suggestions_after_submitting_or_in_rounds_that_do_not_collect_them(built):
    round1 = built.round(1)
    panelist = built.panelists[0]
    client = client_for(panelist.user)
    url = reverse("delphi:panel_suggest", kwargs={"study_id": built.study.pk})
    rename = {
        "kind": "rename",
        "target": str(item(round1, "Billing").identity),
        "name": "Invoicing",
        "text": "clearer",
    }
    client.post(round_url(built), {**full_answers(round1), "action": "submit"})
    late = client.post(url, rename, follow=True)
    assert "round 1 is final for you (submitted)" in late.content.decode()
    assert not Suggestion.objects.exists()

    round2 = advance_to_round2(built)
    assert not round2.collects_suggestions
    page = client.get(round_url(built)).content.decode()
    assert 'id="suggestions"' not in page
    refused = client.post(url, {**rename, "target": str(item(round2, "Billing").identity)})
    assert refused.status_code == 400
    assert "round 2 does not collect suggestions" in refused.content.decode()
