"""The questionnaire without JS: saving a draft, and submitting (refused with what is missing,
by item, until complete)."""

from __future__ import annotations

import json
import re

import pytest

from delphi.models import PanelistRound, Response
from tests.delphi.panel.pages import (
    client_for,
    draft_url,
    full_answers,
    item,
    round_url,
    suggest_url,
)

pytestmark = pytest.mark.django_db


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


def test_a_malformed_id_in_the_form_is_a_400_not_a_500(built):
    round1 = built.round(1)
    diagnosis = item(round1, "Diagnosis")
    client = client_for(built.panelists[0].user)
    page = client.post(
        round_url(built),
        {"action": "save", f"item-{diagnosis.pk}-placement_choice": "not-a-uuid"},
    )
    assert page.status_code == 400
    assert "not a category id" in page.content.decode()
    suggestion = client.post(
        suggest_url(built), {"kind": "merge", "target": "12; drop", "into": "x", "text": "why"}
    )
    assert suggestion.status_code == 400
    assert not Response.objects.exists()
