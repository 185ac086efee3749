"""The rating page itself across a PostgreSQL outage, in Chromium against gunicorn with
production settings on a private cluster (test_database_restart.py does the same with API
clients): a change made while the database is down is shown as not saved and retried by the
page until it is; a Submit sent while it is down lands on a page that says nothing was saved
and links back to the form, which still holds the answers; the second Submit is stored once.
"""

from __future__ import annotations

import re
import threading
import time
from pathlib import Path

import psycopg
import pytest

from tests.support.outage_site import set_up_site
from tests.support.private_postgres import missing_binaries, private_cluster

SHOTS = Path("/tmp/database-restart-browser")

pytestmark = [
    pytest.mark.slow,
    pytest.mark.postgres,
    pytest.mark.browser,
    pytest.mark.skipif(missing_binaries() is not None, reason=str(missing_binaries())),
]


def stored(url: str, handle: str) -> tuple[str, dict[str, int | None]]:
    """The assignment's status and its answered rating rows (criterion key -> value; a draft
    also keeps a row without a value per open criterion), read straight from the cluster."""
    with psycopg.connect(url, autocommit=True) as conn:
        status = conn.execute(
            "SELECT status FROM annotation_assignment WHERE handle = %s", (handle,)
        ).fetchone()[0]
        rows = conn.execute(
            "SELECT c.key, r.value FROM annotation_rating r "
            "JOIN annotation_assignment a ON a.id = r.assignment_id "
            "JOIN annotation_rubriccriterion c ON c.id = r.criterion_id "
            "WHERE a.handle = %s AND r.value IS NOT NULL",
            (handle,),
        ).fetchall()
    return status, dict(rows)


def in_a_thread_of_its_own(drive) -> None:
    """Run `drive(browser)` with Chromium driven from a thread of its own (as
    tests/deploy/test_run_production.py: an earlier test of the PostgreSQL stack can leave an
    asyncio loop running in the main thread, where Playwright's sync API refuses to start)."""
    from playwright.sync_api import sync_playwright

    from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS

    failure: list[BaseException] = []

    def run() -> None:
        try:
            with sync_playwright() as p:
                chromium = p.chromium.launch(
                    executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
                )
                try:
                    drive(chromium)
                finally:
                    chromium.close()
        except BaseException as exc:  # raised again in the test's thread below
            failure.append(exc)

    thread = threading.Thread(target=run, name="chromium-outage")
    thread.start()
    thread.join()
    if failure:
        raise failure[0]


def wait_until(page, predicate, what: str, timeout: float = 30.0) -> None:
    """Poll (the database) in the browser's time, so that Playwright keeps delivering events."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting until {what}")
        page.wait_for_timeout(100)


def test_the_rating_page_survives_a_database_outage(tmp_path):
    SHOTS.mkdir(exist_ok=True)
    with private_cluster() as cluster:
        url, env, seed = set_up_site(cluster, tmp_path, clinicians=1, items=4, k=1)
        from ratingbench.gunicorn import Gunicorn

        server = Gunicorn(env, 2, 4, tmp_path / "gunicorn.log")
        try:
            server.wait_ready()
            base = f"http://127.0.0.1:{server.port}"
            who = seed["clinicians"][0]
            study = seed["study_id"]
            seen: dict = {}

            def drive(chromium) -> None:
                from playwright.sync_api import expect

                context = chromium.new_context()
                context.add_cookies([{"name": "sessionid", "value": who["session"], "url": base}])
                page = context.new_page()
                page.goto(f"{base}/studies/{study}/rate/")
                handle = re.search(rf"/studies/{study}/rate/([-\w]+)/$", page.url).group(1)
                seen["handle"] = handle
                save_state = page.locator("#save-state")

                # Two answers, autosaved as a draft while the database is up.
                page.keyboard.press("4")
                page.keyboard.press("3")
                wait_until(
                    page,
                    lambda: stored(url, handle)[1] == {"accuracy": 4, "completeness": 3},
                    "the draft reaches the server",
                )
                expect(save_state).to_have_text("Draft saved")

                # The database goes down; the third answer cannot be saved, and the page says
                # so and that it will retry (the server's 503 reason, not a generic failure).
                cluster.stop()
                page.keyboard.press("5")
                expect(save_state).to_have_text(
                    re.compile(r"^Not saved: .*will retry$"), timeout=15_000
                )
                seen["while_down"] = save_state.inner_text()
                page.screenshot(path=str(SHOTS / "1-draft-not-saved.png"), full_page=False)

                # The database comes back: the page's own retry (every 5 s) saves it.
                cluster.start()
                wait_until(
                    page,
                    lambda: (
                        stored(url, handle)[1] == {"accuracy": 4, "completeness": 3, "clarity": 5}
                    ),
                    "the page's retry saves the change made during the outage",
                )
                expect(save_state).to_have_text("Draft saved")

                # Down again at the moment of Submit: the form's POST gets the outage page.
                cluster.stop()
                with page.expect_navigation():
                    page.locator("#submit-button").click()
                heading = page.get_by_role("heading", name="Database unavailable")
                expect(heading).to_be_visible()
                seen["outage_page"] = page.locator("body").inner_text()
                page.screenshot(path=str(SHOTS / "2-submit-during-outage.png"), full_page=False)

                # Back up; the page's link reopens the form with the answers still there.
                cluster.start()
                time.sleep(1.0)
                page.get_by_role("link", name="Open this page again").click()
                page.wait_for_url(f"{base}/studies/{study}/rate/{handle}/")
                for key, value in {"accuracy": 4, "completeness": 3, "clarity": 5}.items():
                    expect(
                        page.locator(f"input[type=radio][name='c-{key}'][value='{value}']")
                    ).to_be_checked()
                seen["status_before_second_submit"] = stored(url, handle)[0]
                with page.expect_navigation():
                    page.locator("#submit-button").click()
                page.screenshot(path=str(SHOTS / "3-after-second-submit.png"), full_page=False)
                seen["after_url"] = page.url
                context.close()

            in_a_thread_of_its_own(drive)
            status, values = stored(url, seen["handle"])
            with psycopg.connect(url, autocommit=True) as conn:
                audit = conn.execute(
                    "SELECT count(*) FROM annotation_auditevent WHERE action = 'rating.submit'"
                ).fetchone()[0]
        finally:
            server.stop()

    print(
        f"\nFAULT database, in the browser: while down the page said {seen['while_down']!r}; "
        f"the Submit during the outage showed {seen['outage_page']!r}"
    )
    assert "database is unavailable" in seen["while_down"]
    assert "nothing was saved" in seen["outage_page"]
    assert "What you sent was not saved: send it again from there." in seen["outage_page"]
    # The Submit during the outage stored nothing; the second one stored each answer once.
    assert seen["status_before_second_submit"] == "in_progress"
    assert status == "submitted"
    assert values == {"accuracy": 4, "completeness": 3, "clarity": 5}
    assert audit == 3  # one rating.submit row per criterion, from the one accepted Submit
