"""A demo clinician logs in through the real login page and sees their rating queue."""

from __future__ import annotations

import pytest

from annotation.demo import load_demo
from annotation.models import Assignment


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_demo_clinician_logs_in_and_sees_the_queue(live_server, page):
    logins = {login.username: login.password for login in load_demo()}
    page.goto(live_server.url + "/")
    assert "/accounts/login/" in page.url  # anonymous users are sent to log in
    page.fill("#id_username", "clinician1")
    page.fill("#id_password", logins["clinician1"])
    page.click("button[type=submit]")
    page.wait_for_selector("text=Your rating queues")
    remaining = page.inner_text("[data-testid=remaining]")
    open_work = (
        Assignment.objects.filter(clinician__username="clinician1")
        .exclude(status="submitted")
        .count()
    )
    assert int(remaining) == open_work > 0
    page.click("text=Open queue")
    page.wait_for_selector("[data-testid=queue]")
    rows = page.locator("[data-testid=queue] tbody tr")
    assert rows.count() == Assignment.objects.filter(clinician__username="clinician1").count()
    assert "rated" in page.inner_text("[data-testid=queue-progress]")


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_wrong_password_is_refused(live_server, page):
    load_demo()
    page.goto(live_server.url + "/accounts/login/")
    page.fill("#id_username", "clinician1")
    page.fill("#id_password", "not-the-password")
    page.click("button[type=submit]")
    page.wait_for_selector("text=didn't match")
    assert "/accounts/login/" in page.url
