"""The rating page in a real browser, driven by the keyboard only.

The issue's scenario: a clinician logs in, rates three items with the keyboard only, closes
the tab halfway through the fourth, logs in again and finds the draft; the model's name
appears nowhere in what the browser received. Around it: a change made while the connection
is down survives reopening the page and then reaches the server; flagging with f; n / p in
the clinician's own order; a locked study ignores the keys; time on item is recorded.

Every check that matters reads the database (what the server kept), not only the page.
"""

from __future__ import annotations

import contextlib
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

import pytest
from django.urls import reverse
from playwright.sync_api import (
    Browser,
    BrowserContext,
    Error,
    Locator,
    Page,
    Response,
    expect,
)

from annotation import services
from annotation.models import Assignment, Item, Rating, RatingStudy, StudyMembership
from tests.factories import MEDHELM_CRITERIA, TEST_PASSWORD, UserFactory

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

KEYS = tuple(c["key"] for c in MEDHELM_CRITERIA)  # accuracy, completeness, clarity
# Distinctive names, so that finding one in a response cannot be a coincidence.
MODEL_NAMES = ("zorblax-med-70b", "quillion-clin-8b")
RATER = "dr-ana-rater"
OTHER_RATERS = ("dr-ben-rater", "dr-cleo-rater")
N_CASES = 6  # x 2 models = 12 items, k = 2 over 3 clinicians: 8 assignments each
TIMEOUT_MS = 10_000


# --- data ----------------------------------------------------------------------------------


@dataclass
class KeyboardStudy:
    study: RatingStudy
    coordinator: object
    rater: object
    queue: list[Assignment]  # the rater's assignments in their own order


@pytest.fixture
def keyboard_study(transactional_db) -> KeyboardStudy:
    coordinator = UserFactory(username="coord-keyboard")
    study = services.create_study(
        name="Keyboard rating study",
        created_by=coordinator,
        criteria=MEDHELM_CRITERIA,
        ratings_per_item=2,
        instructions="Rate each response from 1 (very poor) to 5 (excellent).",
    )
    rater = UserFactory(username=RATER)
    for user in [rater, *(UserFactory(username=u) for u in OTHER_RATERS)]:
        services.add_member(
            study=study, user=user, role=StudyMembership.Role.CLINICIAN, actor=coordinator
        )
    rows = [
        services.ItemRow(
            external_id=f"kb-{case:02d}",
            input_text=f"Case {case}: a 58-year-old with chest pain. What is the next step?",
            reference_text=f"Reference for case {case}: ECG within ten minutes.",
            output_text=f"Response {variant} to case {case}: obtain an ECG, then troponin.",
            model_name=model,
            benchmark="KeyboardBench",
            metadata={"source_model": model},
        )
        for case in range(N_CASES)
        for variant, model in enumerate(MODEL_NAMES, start=1)
    ]
    services.create_items(study=study, rows=rows, actor=coordinator)
    services.assign_items(study=study, actor=coordinator, seed=11)
    queue = list(Assignment.objects.filter(study=study, clinician=rater).order_by("position"))
    assert len(queue) >= 6, "the scenarios below need at least six items in the rater's queue"
    return KeyboardStudy(study=study, coordinator=coordinator, rater=rater, queue=queue)


# --- browser helpers -----------------------------------------------------------------------


@pytest.fixture
def new_context(browser: Browser) -> Iterator[Callable[[], BrowserContext]]:
    """Fresh browser contexts (own cookies and localStorage), all closed at the end."""
    made: list[BrowserContext] = []

    def make() -> BrowserContext:
        context = browser.new_context()
        context.set_default_timeout(TIMEOUT_MS)
        made.append(context)
        return context

    yield make
    for context in made:
        with contextlib.suppress(Error):  # closed by the test already
            context.close()


TEXT_TYPES = ("text/", "json", "javascript", "ecmascript", "xml", "css")


@dataclass
class ResponseLog:
    """Everything the browser received: headers of every response, bodies of text ones.

    A body can only be read while its document is alive, so the test settles the log (every
    request finished, every body read) before it navigates away or closes a context.
    """

    received: list[tuple[str, str]] = field(default_factory=list)  # (url, text)
    unreadable: list[tuple[str, str]] = field(default_factory=list)
    in_flight: set = field(default_factory=set)
    reading: int = 0

    def attach(self, context: BrowserContext) -> None:
        context.on("request", lambda request: self.in_flight.add(request))
        context.on("requestfinished", lambda request: self.in_flight.discard(request))
        context.on("requestfailed", lambda request: self.in_flight.discard(request))
        context.on("response", self._record)

    def _record(self, response: Response) -> None:
        self.reading += 1
        try:
            headers = "\n".join(f"{k}: {v}" for k, v in response.headers.items())
            self.received.append((response.url, headers))
            ctype = response.headers.get("content-type", "")
            if 300 <= response.status < 400 or not any(t in ctype for t in TEXT_TYPES):
                return
            self.received.append((response.url, response.text()))
        except Error as exc:  # the document went away before the body was read
            self.unreadable.append((response.url, str(exc)))
        finally:
            self.reading -= 1

    def settle(self, page: Page, timeout: float = 5.0) -> None:
        deadline = time.monotonic() + timeout
        quiet = 0  # two quiet turns in a row: no event was still queued
        while quiet < 2 and time.monotonic() < deadline:
            page.wait_for_timeout(25)  # lets Playwright deliver the pending events
            quiet = 0 if self.in_flight or self.reading else quiet + 1
        assert not self.in_flight, f"requests still open: {[r.url for r in self.in_flight]}"
        assert not self.reading, "response bodies still being read"

    def close(self, context: BrowserContext) -> None:
        self.settle(context.pages[-1])
        context.close()

    def urls(self) -> list[str]:
        return [url for url, _ in self.received]

    def containing(self, needle: str) -> list[str]:
        needle = needle.lower()
        return sorted({url for url, text in self.received if needle in text.lower()})


def rate_url(live_server, assignment: Assignment) -> str:
    path = reverse(
        "annotation:rate", kwargs={"study_id": assignment.study_id, "assignment_id": assignment.pk}
    )
    return live_server.url + path


def log_in(context: BrowserContext, live_server, username: str) -> Page:
    """Log in through the real login form; returns the page showing the home page."""
    page = context.new_page()
    page.goto(live_server.url + "/")
    page.wait_for_url(re.compile(r"/accounts/login/"))
    page.fill("#id_username", username)
    page.fill("#id_password", TEST_PASSWORD)
    page.press("#id_password", "Enter")
    expect(page.get_by_role("heading", name="Your rating queues")).to_be_visible()
    return page


def press(page: Page, keys: str) -> None:
    for key in keys:
        page.keyboard.press(key)


def radio(page: Page, key: str, value: int) -> Locator:
    return page.locator(f"input[type=radio][name='c-{key}'][value='{value}']")


def checked_values(page: Page) -> dict[str, int]:
    """What the form shows as checked, criterion key -> value."""
    found = page.eval_on_selector_all(
        "#rating-form input[type=radio]:checked", "els => els.map(e => [e.name, e.value])"
    )
    return {name.removeprefix("c-"): int(value) for name, value in found}


def saved_values(assignment: Assignment) -> dict[str, int | None]:
    """Every rating row the server kept for an assignment, criterion key -> value."""
    return dict(
        Rating.objects.filter(assignment_id=assignment.pk).values_list("criterion__key", "value")
    )


def answered(assignment: Assignment) -> dict[str, int]:
    """The values the server kept (a draft also keeps a row, without value, per open criterion)."""
    return {k: v for k, v in saved_values(assignment).items() if v is not None}


def wait_until(
    page: Page, predicate: Callable[[], object], what: str, timeout: float = 10.0
) -> None:
    """Poll the database until the server has done something the browser started. Waits in
    the browser's time, so that Playwright keeps delivering events meanwhile."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting until {what}")
        page.wait_for_timeout(50)


def status_of(assignment: Assignment) -> str:
    return Assignment.objects.values_list("status", flat=True).get(pk=assignment.pk)


# --- 1. the scenario ----------------------------------------------------------------


def test_keyboard_rating_survives_a_closed_tab_and_never_reveals_the_model(
    live_server, new_context, keyboard_study
):
    s = keyboard_study
    log = ResponseLog()
    scores = [(4, 3, 5), (2, 5, 1), (5, 4, 4)]

    # First session: log in, rate three items with digit keys and Enter only.
    first = new_context()
    log.attach(first)
    page = log_in(first, live_server, RATER)
    page.get_by_role("link", name="Continue rating").click()
    for i, values in enumerate(scores):
        assignment = s.queue[i]
        page.wait_for_url(rate_url(live_server, assignment))
        expect(page.locator(".rate-head")).to_contain_text(f"Item {i + 1} of {len(s.queue)}")
        expect(page.get_by_test_id("status")).to_have_text("Not started")
        press(page, "".join(map(str, values)))  # each digit scores one criterion and moves on
        assert checked_values(page) == dict(zip(KEYS, values, strict=True))
        wait_until(
            page,
            lambda a=assignment, v=values: answered(a) == dict(zip(KEYS, v, strict=True)),
            "the answers are autosaved",
        )
        expect(page.locator("#save-state")).to_have_text("Draft saved")
        log.settle(page)
        page.keyboard.press("Enter")
        page.wait_for_url(rate_url(live_server, s.queue[i + 1]))
        assert status_of(assignment) == Assignment.Status.SUBMITTED
        assert saved_values(assignment) == dict(zip(KEYS, values, strict=True))
    submitted = Assignment.objects.filter(
        study=s.study, clinician=s.rater, status=Assignment.Status.SUBMITTED
    )
    assert sorted(submitted.values_list("pk", flat=True)) == sorted(a.pk for a in s.queue[:3])

    # Halfway through the fourth: two of three criteria, autosaved, then the tab is closed.
    fourth = s.queue[3]
    expect(page.get_by_test_id("status")).to_have_text("Not started")
    press(page, "24")
    wait_until(
        page,
        lambda: answered(fourth) == {"accuracy": 2, "completeness": 4},
        "the draft of the fourth item reaches the server",
    )
    expect(page.locator("#save-state")).to_have_text("Draft saved")
    assert status_of(fourth) == Assignment.Status.IN_PROGRESS
    log.close(first)  # the tab goes away mid-item, without submitting

    # Second session, a fresh browser context: the queue's "Continue rating" opens the draft.
    second = new_context()
    log.attach(second)
    page = log_in(second, live_server, RATER)
    page.get_by_role("link", name="Open queue").click()
    page.get_by_test_id("continue").click()
    page.wait_for_url(rate_url(live_server, fourth))
    expect(page.get_by_test_id("status")).to_have_text("Draft")
    expect(radio(page, "accuracy", 2)).to_be_checked()
    expect(radio(page, "completeness", 4)).to_be_checked()
    assert checked_values(page) == {"accuracy": 2, "completeness": 4}
    # The keyboard picks up at the first criterion still open: one digit and Enter finish it.
    press(page, "3")
    wait_until(
        page,
        lambda: answered(fourth) == {"accuracy": 2, "completeness": 4, "clarity": 3},
        "autosave",
    )
    log.settle(page)
    page.keyboard.press("Enter")
    page.wait_for_url(rate_url(live_server, s.queue[4]))
    assert status_of(fourth) == Assignment.Status.SUBMITTED
    assert saved_values(fourth) == {"accuracy": 2, "completeness": 4, "clarity": 3}
    log.close(second)

    # Blinding: nothing the browser received names a model or another clinician.
    assert not log.unreadable, f"response bodies the check could not read: {log.unreadable}"
    urls = log.urls()
    assert any("/draft/" in u for u in urls), "the check must include the autosave answers"
    assert any(u.endswith("/rate.js") for u in urls)
    assert log.containing(RATER), "the rater's own name is in the page header: bodies were read"
    assert log.containing("Response 1 to case"), "the model outputs were received"
    model_names = set(Item.objects.filter(study=s.study).values_list("model_name", flat=True))
    assert model_names == set(MODEL_NAMES)
    for secret in [*model_names, *OTHER_RATERS]:
        assert not log.containing(secret), f"{secret!r} was sent to the rater's browser"


# --- 1b. a change the server never saw -----------------------------------------------------


def test_change_made_offline_survives_reopening_and_then_reaches_the_server(
    live_server, new_context, keyboard_study
):
    s = keyboard_study
    item = s.queue[0]
    storage_key = f"medhelm-draft-{item.pk}"
    context = new_context()
    page = log_in(context, live_server, RATER)
    page.get_by_role("link", name="Continue rating").click()
    page.wait_for_url(rate_url(live_server, item))
    save_state = page.locator("#save-state")

    press(page, "4")
    wait_until(page, lambda: answered(item) == {"accuracy": 4}, "the first value is autosaved")
    expect(save_state).to_have_text("Draft saved")

    # The connection drops; the next digit cannot reach the server but is kept in the browser.
    context.set_offline(True)
    press(page, "2")
    expect(save_state).to_have_text(re.compile(r"^Offline: kept in this browser"))
    kept = page.evaluate("k => JSON.parse(localStorage.getItem(k))", storage_key)
    assert kept["answers"]["completeness"]["value"] == 2
    # The tab is closed while still offline: its last-gasp save cannot get through either.
    page.close()
    assert answered(item) == {"accuracy": 4}, "the server must not have seen the offline change"

    # Back online, the same browser opens the item again.
    context.set_offline(False)
    page = context.new_page()
    response = page.goto(rate_url(live_server, item))
    served = response.text()
    assert re.search(r'name="c-accuracy" value="4" checked', served)
    assert not re.search(r'name="c-completeness" value="\d" checked', served)
    # ... the page restores the unsent value from localStorage and sends it.
    expect(radio(page, "completeness", 2)).to_be_checked()
    expect(radio(page, "accuracy", 4)).to_be_checked()
    wait_until(
        page,
        lambda: answered(item) == {"accuracy": 4, "completeness": 2},
        "the restored change reaches the server",
    )
    expect(page.locator("#save-state")).to_have_text("Draft saved")
    assert page.evaluate("k => localStorage.getItem(k)", storage_key) is None
    assert status_of(item) == Assignment.Status.IN_PROGRESS


# --- 2. flag with f -----------------------------------------------------------------------


def test_f_flags_the_item_with_the_reason_typed_into_the_prompt(
    live_server, new_context, keyboard_study
):
    s = keyboard_study
    item = s.queue[0]
    reason = "Dose <b>10x</b> too high & unsafe"  # markup must show as text, not be rendered
    dialogs: list[tuple[str, str]] = []

    def answer(dialog) -> None:
        dialogs.append((dialog.type, dialog.message))
        if dialog.type == "prompt":
            dialog.accept(reason)
        else:
            dialog.accept()

    page = log_in(new_context(), live_server, RATER)
    page.on("dialog", answer)
    page.get_by_role("link", name="Continue rating").click()
    page.wait_for_url(rate_url(live_server, item))
    button = page.locator("#flag-button")
    expect(button).to_have_text("Flag item f")

    page.keyboard.press("f")
    expect(button).to_have_text(f"Flagged: {reason} (unflag) f")
    assert [kind for kind, _ in dialogs] == ["prompt"]
    assert "flag" in dialogs[0][1].lower()
    flagged = Assignment.objects.get(pk=item.pk)
    assert flagged.flagged is True
    assert flagged.flag_reason == reason
    assert flagged.status == Assignment.Status.PENDING, "flagging is not rating"

    # The server renders the flag after a reload; f again asks to confirm, then unflags.
    page.reload()
    expect(button).to_have_text(f"Flagged: {reason} (unflag) f")
    page.keyboard.press("f")
    expect(button).to_have_text("Flag item f")
    assert [kind for kind, _ in dialogs] == ["prompt", "confirm"]
    unflagged = Assignment.objects.get(pk=item.pk)
    assert (unflagged.flagged, unflagged.flag_reason) == (False, "")


# --- 3. n / p -----------------------------------------------------------------------------


def test_n_and_p_walk_the_clinicians_own_order_and_keep_a_started_draft(
    live_server, new_context, keyboard_study
):
    s = keyboard_study
    q = s.queue
    item_order = [a.item_id for a in q]
    assert item_order != sorted(item_order), "the rater's own order must differ from item order"
    page = log_in(new_context(), live_server, RATER)
    page.get_by_role("link", name="Continue rating").click()
    page.wait_for_url(rate_url(live_server, q[0]))
    visited: list[str] = []
    page.on(
        "framenavigated",
        lambda frame: visited.append(frame.url) if frame == page.main_frame else None,
    )

    page.keyboard.press("p")  # nothing before the first item: stays put
    page.keyboard.press("n")
    page.wait_for_url(rate_url(live_server, q[1]))
    expect(page.locator(".rate-head")).to_contain_text(f"Item 2 of {len(q)}")
    page.keyboard.press("n")
    page.wait_for_url(rate_url(live_server, q[2]))
    expect(page.locator(".rate-head")).to_contain_text(f"Item 3 of {len(q)}")
    page.keyboard.press("p")
    page.wait_for_url(rate_url(live_server, q[1]))
    # A digit then n at once: the draft is sent before the page leaves.
    press(page, "5n")
    page.wait_for_url(rate_url(live_server, q[2]))
    wait_until(
        page, lambda: answered(q[1]) == {"accuracy": 5}, "the draft left behind by n is saved"
    )
    assert visited == [rate_url(live_server, a) for a in (q[1], q[2], q[1], q[2])]
    # The last item has no next: n stays put, p goes back.
    page.goto(rate_url(live_server, q[-1]))
    page.keyboard.press("n")
    page.keyboard.press("p")
    page.wait_for_url(rate_url(live_server, q[-2]))
    assert visited[-2:] == [rate_url(live_server, q[-1]), rate_url(live_server, q[-2])]


# --- 4. a locked study --------------------------------------------------------------------


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


# --- 5. time on item ----------------------------------------------------------------------


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
