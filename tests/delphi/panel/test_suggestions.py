"""A panelist's suggestions to change the taxonomy: recorded, listed to them alone, refused
after submitting and in rounds that do not collect them."""

from __future__ import annotations

import html

import pytest

from delphi.models import Suggestion
from tests.delphi.panel.pages import (
    advance_to_round2,
    client_for,
    full_answers,
    item,
    round_url,
    suggest_url,
)

pytestmark = pytest.mark.django_db


def test_suggestions_are_recorded_and_listed_and_refusals_shown(built):
    round1 = built.round(1)
    panelist = built.panelists[0]
    client = client_for(panelist.user)
    url = suggest_url(built)
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
    listed = html.unescape(page[page.index('data-testid="own-suggestions"') :])
    assert "add subcategory 'Coding' under 'Administration'" in listed
    assert "merge into 'Scheduling'" in listed
    # Another panelist does not see them.
    other = client_for(built.panelists[1].user).get(round_url(built)).content.decode()
    assert "Coding" not in other


def test_no_suggestions_after_submitting_or_in_rounds_that_do_not_collect_them(built):
    round1 = built.round(1)
    panelist = built.panelists[0]
    client = client_for(panelist.user)
    url = suggest_url(built)
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
