"""Time on item is recorded with the submission."""

from __future__ import annotations

import time

import pytest

from annotation.models import Assignment
from tests.e2e.factories import RATER
from tests.support.rating_page import log_in, press, rate_url

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_time_on_item_is_recorded_with_the_submission(live_server, new_context, keyboard_study):
    s = keyboard_study
    item = s.queue[0]
    page = log_in(new_context(), live_server, RATER)
    opened = time.monotonic()
    page.get_by_role("link", name="Continue rating").click()
    page.wait_for_url(rate_url(live_server, item))
    press(page, "444")
    page.wait_for_timeout(1500)  # the clinician reads before submitting
    page.keyboard.press("Enter")
    page.wait_for_url(rate_url(live_server, s.queue[1]))
    wall = time.monotonic() - opened
    spent = Assignment.objects.get(pk=item.pk)
    assert spent.status == Assignment.Status.SUBMITTED
    # At least the 1.5 s on the page (autosave and submission together), at most the wall time.
    assert 1.4 < spent.time_spent_seconds < 60
    assert spent.time_spent_seconds <= wall + 0.5
