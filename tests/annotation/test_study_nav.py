"""The study navigation on every study page: a researcher gets the pages they may open, a
coordinator the coordinator's pages too (never links a role cannot follow)."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from tests.factories import make_study_with_members

pytestmark = pytest.mark.django_db

COORDINATOR_ONLY = ("Settings &amp; rubric", "Members", "Import items", "Audit log")


def nav_of(user, url: str) -> str:
    client = Client()
    client.force_login(user)
    html = client.get(url).content.decode()
    start = html.index('<nav class="subnav" aria-label="Study">')
    return html[start : html.index("</nav>", start)]


@pytest.mark.parametrize("page", ["agreement:reports", "jury:prompt"])
def test_the_study_nav_follows_the_role(page):
    built = make_study_with_members(n_items=2, n_clinicians=2, k=1)
    url = reverse(page, kwargs={"study_id": built.study.pk})
    researcher, coordinator = nav_of(built.researcher, url), nav_of(built.coordinator, url)
    for nav in (researcher, coordinator):
        assert "Dashboard" in nav and "LLM jury" in nav and "Agreement reports" in nav
    assert not any(link in researcher for link in COORDINATOR_ONLY)
    assert all(link in coordinator for link in COORDINATOR_ONLY)
