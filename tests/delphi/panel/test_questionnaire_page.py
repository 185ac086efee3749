"""The round questionnaire as a panelist sees it: the banded scale, the released feedback,
their own previous answer, the reason asked outside the IQR, changed wording, anonymity."""

from __future__ import annotations

import re

import pytest

from delphi import services
from delphi.models import Suggestion
from tests.delphi.flow import BASE_URL
from tests.delphi.panel.pages import (
    DASH,
    advance_to_round2,
    answer_round1,
    client_for,
    feedback_of,
    full_answers,
    item,
    round_url,
    section,
)

pytestmark = pytest.mark.django_db


def test_round_one_shows_every_item_indented_with_the_banded_scale(built):
    round1 = built.round(1)
    page = client_for(built.panelists[0].user).get(round_url(built))
    assert page.status_code == 200
    html = page.content.decode()
    names = [m for m in re.findall(r'<h2 class="q-name"[^>]*>([^<]+)</h2>', html)]
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
    assert re.search(rf'data-stat="iqr">4.25{DASH}5.75 \(1.5\)<', feedback)
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
    assert f"Diagnosis: your rating 8 is outside the panel&#x27;s IQR 4.25{DASH}5.75 (1.5)" in text
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
