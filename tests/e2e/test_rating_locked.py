"""A locked study shows a notice, and the rating keys change and send nothing."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from annotation import services
from annotation.models import Assignment, Rating
from tests.e2e.factories import RATER
from tests.support.rating_page import checked_values, log_in, press, radio, rate_url

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_locked_study_shows_the_notice_and_ignores_rating_keys(
    live_server, new_context, keyboard_study
):
    s = keyboard_study
    item = s.queue[0]
    services.save_draft(
        assignment_id=item.pk,
        clinician=s.rater,
        answers={"accuracy": services.CriterionAnswer(value=3)},
        time_spent_seconds=10,
    )
    services.set_study_lock(study=s.study, locked=True, actor=s.coordinator)
    before = Assignment.objects.values("status", "flagged", "time_spent_seconds", "updated_at").get(
        pk=item.pk
    )
    ratings_before = list(Rating.objects.filter(assignment=item).values())

    page = log_in(new_context(), live_server, RATER)
    writes: list[str] = []
    page.on(
        "request", lambda r: writes.append(f"{r.method} {r.url}") if r.method != "GET" else None
    )
    dialogs: list[str] = []
    page.on("dialog", lambda d: (dialogs.append(d.type), d.dismiss()))
    page.get_by_role("link", name="Continue rating").click()
    page.wait_for_url(rate_url(live_server, item))
    expect(page.get_by_role("status")).to_have_text(
        "This study is locked: ratings can no longer change."
    )
    expect(radio(page, "accuracy", 3)).to_be_checked()

    press(page, "512")
    page.keyboard.press("x")
    page.keyboard.press("f")
    page.keyboard.press("Enter")
    page.wait_for_timeout(700)  # longer than the 400 ms autosave delay: nothing may follow
    assert checked_values(page) == {"accuracy": 3}
    assert writes == [], "a locked page must not send anything"
    assert dialogs == []
    # The keys reach the page (n still works), so nothing changed because nothing may change.
    page.keyboard.press("n")
    page.wait_for_url(rate_url(live_server, s.queue[1]))
    assert writes == []
    after = Assignment.objects.values("status", "flagged", "time_spent_seconds", "updated_at").get(
        pk=item.pk
    )
    assert after == before
    assert list(Rating.objects.filter(assignment=item).values()) == ratings_before
    assert not Rating.objects.filter(assignment=s.queue[1]).exists()
