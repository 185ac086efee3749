"""What a hospital tries on its first day, in Chromium, against the production layout that
docs/deploy/run-production.sh brings up (tests/deploy/test_run_production.py): single sign-on
through the test OpenID provider, a clinician rating and logging out, a coordinator's pages
and a report computed by the layout's Celery workers, and the login throttle.

Every step ends with `Watch.check`: no Content-Security-Policy violation (the document's
`securitypolicyviolation` events and Chromium's console lines), no console error, no
uncaught script error and no response of 400 or more, unless the step expects it (a
lockout answers 429). What the server kept is read from the installation's database with
`manage.py shell` in the installation's environment (tests.support.deploy.django_json).
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar

from playwright.sync_api import Browser, BrowserContext, Page, expect

from tests.support.deploy import django_json

T = TypeVar("T")
TIMEOUT_MS = 20_000
# The report: few resamples (the numbers are checked against the stored snapshot, not their
# precision); a busy two-core machine still takes a minute or more.
REPORT_RESAMPLES = 200
REPORT_TIMEOUT_MS = 400_000

#: Installed before the page's own scripts: every violation, as the browser reports it.
LISTEN = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(`${e.violatedDirective} blocked ${e.blockedURI} at ${e.sourceFile}:${e.lineNumber}`);
});
"""


def in_chromium(work: Callable[[Browser], T]) -> T:
    """`work(browser)` with Chromium driven from a thread of its own: an earlier test of the
    session (the jury's asyncio engine) can leave an event loop running in the main thread,
    inside which Playwright's sync API refuses to start."""
    from playwright.sync_api import sync_playwright

    from tests.e2e.conftest import CHROMIUM, CHROMIUM_ARGS

    done: dict[str, Any] = {}

    def run() -> None:
        try:
            with sync_playwright() as p:
                chromium = p.chromium.launch(
                    executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True
                )
                try:
                    done["value"] = work(chromium)
                finally:
                    chromium.close()
        except BaseException as exc:  # raised again in the test's thread below
            done["error"] = exc

    thread = threading.Thread(target=run, name="chromium-walk")
    thread.start()
    thread.join()
    if "error" in done:
        raise done["error"]
    return done["value"]


@dataclass
class Watch:
    """Everything a page of the site reported that a hospital's user would call broken.
    Console lines of other sites' pages (the OpenID provider's own login page, which has no
    favicon) are theirs, not the site's."""

    page: Page
    origin: str
    problems: list[str] = field(default_factory=list)
    allowed: list[re.Pattern[str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.page.add_init_script(LISTEN)
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self._note(f"uncaught: {error}"))
        self.page.on("response", self._response)
        self.page.on("requestfailed", self._request_failed)

    def _note(self, problem: str) -> None:
        if not any(pattern.search(problem) for pattern in self.allowed):
            self.problems.append(problem)

    def _request_failed(self, request: Any) -> None:
        # ERR_ABORTED is the browser cancelling a load of a page it is leaving (the favicon of
        # a page that redirects at once to the provider, seen in a CI run): not a failure a
        # user meets. Every other failure (refused, reset, TLS, timed out) is noted.
        if request.failure != "net::ERR_ABORTED":
            self._note(f"failed {request.url}: {request.failure}")

    def _console(self, message: Any) -> None:
        text, where = message.text, (message.location or {}).get("url", "")
        if where and not where.startswith(self.origin + "/"):
            return
        if message.type == "error" or "Content Security Policy" in text:
            self._note(f"console {message.type}: {text} ({where})")

    def _response(self, response: Any) -> None:
        if response.status >= 400:
            self._note(f"{response.status} {response.url}")

    @contextmanager
    def allowing(self, *patterns: str) -> Iterator[None]:
        """Within the block, problems matching one of `patterns` are expected."""
        compiled = [re.compile(p) for p in patterns]
        self.allowed.extend(compiled)
        try:
            yield
        finally:
            for pattern in compiled:
                self.allowed.remove(pattern)

    def check(self, step: str) -> None:
        """No problem since the last check, and no CSP violation in the current document."""
        self.page.wait_for_load_state("load")
        violations = self.page.evaluate("() => window.__cspViolations || []")
        found = [*self.problems, *(f"CSP: {v}" for v in violations)]
        self.problems.clear()
        assert found == [], f"{step}: {found}"


@dataclass(frozen=True)
class Site:
    """The installation under test: its address, environment, demo study and logins."""

    base: str
    env: dict[str, str]
    study: int
    logins: dict[str, str]
    provider_name: str

    def query(self, code: str) -> Any:
        """The JSON value `code` prints, run in the installation's `manage.py shell`."""
        return django_json(self.env, "import json\n" + code)


@contextmanager
def browsing(browser: Browser, site: Site) -> Iterator[tuple[BrowserContext, Page, Watch]]:
    context = browser.new_context(ignore_https_errors=True)  # nginx: self-signed
    context.set_default_timeout(TIMEOUT_MS)
    page = context.new_page()
    try:
        yield context, page, Watch(page, site.base)
    finally:
        context.close()


def sign_in_at_provider(page: Page, site: Site, username: str, password: str) -> None:
    page.goto(site.base + "/accounts/login/")
    page.get_by_role("link", name=f"Sign in with {site.provider_name}").click()
    page.wait_for_url(re.compile(r"http://127\.0\.0\.1:\d+/login/"))
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("text=Sign in at the provider")


def log_in_locally(page: Page, site: Site, username: str, password: str) -> None:
    page.goto(site.base + "/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.press("#id_password", "Enter")


def draft_keys(page: Page) -> list[str]:
    return page.evaluate(
        "() => Object.keys(localStorage).filter((k) => k.startsWith('medhelm-draft-'))"
    )


def clinician_signs_in_rates_and_logs_out(
    browser: Browser, site: Site, *, provider_login: tuple[str, str], account: str
) -> dict[str, Any]:
    """Single sign-on as `account` (matched by the provider's verified e-mail), one item
    rated and submitted, a change kept offline in the browser, then the logout (through the
    provider's) that clears it. What the server kept of the submitted item."""
    with browsing(browser, site) as (context, page, watch):
        page.goto(site.base + "/accounts/login/")
        watch.check("the login page with single sign-on")
        sign_in_at_provider(page, site, *provider_login)
        page.wait_for_url(site.base + "/")
        expect(page.locator(".who")).to_have_text(account)
        watch.check("signed in through the provider")

        page.goto(f"{site.base}/studies/{site.study}/rate/")
        page.wait_for_url(re.compile(rf"/studies/{site.study}/rate/[\w-]+/$"))
        handle = page.url.rstrip("/").rsplit("/", 1)[1]
        chosen = {"accuracy": 4, "completeness": 2, "clarity": 5}
        for key, value in chosen.items():
            page.locator(f"input[type=radio][name='c-{key}'][value='{value}']").check()
        page.locator("#submit-button").click()
        expect(page.locator(".messages")).to_contain_text("is submitted.")
        watch.check("an item rated and submitted")
        kept = site.query(
            "from annotation.models import Assignment, Rating\n"
            f"a = Assignment.objects.get(handle={handle!r})\n"
            "print(json.dumps({'clinician': a.clinician.username, 'status': a.status, "
            "'values': dict(Rating.objects.filter(assignment=a)"
            ".values_list('criterion__key', 'value'))}))"
        )
        assert kept == {"clinician": account, "status": "submitted", "values": chosen}, kept

        # The next item: a change made offline is kept in this browser only, until the
        # logout (here and at the provider) clears it. The offline saves fail, as they must.
        page.wait_for_url(re.compile(rf"/studies/{site.study}/rate/(?!{handle}/)[\w-]+/$"))
        with watch.allowing(r"ERR_INTERNET_DISCONNECTED"):
            context.set_offline(True)
            page.locator("input[type=radio][name='c-accuracy'][value='1']").check()
            expect(page.locator("#save-state")).to_have_text(
                re.compile(r"^Offline: kept in this browser")
            )
            assert draft_keys(page), "the offline change is not in localStorage"
            context.set_offline(False)
            with page.expect_response(re.compile(r"/accounts/logout/$")) as logout:
                page.get_by_role("button", name="Log out").click()
            assert logout.value.all_headers().get("clear-site-data") == '"storage"'
            page.wait_for_url(re.compile(r"/accounts/login/\?logged_out=1$"))
            expect(page.get_by_text("You are logged out.")).to_be_visible()
            assert draft_keys(page) == []
            page.goto(site.base + "/")
            assert "/accounts/login/" in page.url, "still signed in after the logout"
        watch.check("logged out")
        return kept


def unverified_email_is_refused(
    browser: Browser, site: Site, *, provider_login: tuple[str, str], email: str
) -> str:
    """Single sign-on with an e-mail the provider has not verified: the login page says so
    and nobody is signed in. The message shown."""
    with browsing(browser, site) as (_, page, watch):
        sign_in_at_provider(page, site, *provider_login)
        page.wait_for_url(re.compile(r"/accounts/login/"))
        refusal = page.get_by_test_id("sso-refusal")
        expect(refusal).to_be_visible()
        expect(refusal).to_contain_text(
            f"{site.provider_name} has not verified your e-mail address {email}"
        )
        message = refusal.inner_text()
        watch.check("an unverified e-mail refused")
        page.goto(site.base + "/")
        assert "/accounts/login/" in page.url, "signed in with an unverified e-mail"
        watch.check("not signed in after the refusal")
        return message


def coordinator_pages_and_a_report(
    browser: Browser, site: Site, *, account: str, rater: str
) -> dict[str, Any]:
    """A local account's login, the dashboard, the audit log filtered to `rater`'s
    submissions, the jury's page and a report computed in the background. The stored
    report's job."""
    with browsing(browser, site) as (_, page, watch):
        log_in_locally(page, site, account, site.logins[account])
        page.wait_for_url(site.base + "/")
        expect(page.locator(".who")).to_have_text(account)
        watch.check("a local account's login")

        counts = site.query(
            "from annotation.models import Assignment, AuditEvent\n"
            "from django.contrib.auth import get_user_model\n"
            f"rater = get_user_model().objects.get(username={rater!r})\n"
            f"a = Assignment.objects.filter(study_id={site.study})\n"
            "print(json.dumps({'rater': rater.pk, 'assignments': a.count(), "
            "'submitted': a.filter(status='submitted').count(), "
            "'submits': AuditEvent.objects.filter(study_id="
            f"{site.study}, actor=rater, action='rating.submit').count()}}))"
        )
        page.goto(f"{site.base}/studies/{site.study}/")
        expect(page.get_by_test_id("overall")).to_contain_text(
            f"{counts['submitted']} of {counts['assignments']} assignments submitted"
        )
        watch.check("the dashboard")

        page.goto(
            f"{site.base}/studies/audit/?study={site.study}&user={counts['rater']}"
            "&action=rating.submit"
        )
        expect(page.get_by_test_id("audit-count")).to_have_text(
            re.compile(rf"^{counts['submits']} rows?\b")
        )
        expect(page.locator("table.audit tbody tr").first).to_contain_text(rater)
        watch.check("the audit log")

        page.goto(f"{site.base}/studies/{site.study}/jury/")
        expect(page.locator("h1")).to_contain_text("LLM jury")
        watch.check("the jury's page")

        title = "Day one report"
        page.goto(f"{site.base}/studies/{site.study}/agreement/")
        page.fill("#id_title", title)
        page.fill("#id_n_resamples", str(REPORT_RESAMPLES))
        page.fill("#id_seed", "7")
        page.click("[data-testid=new-report] button[type=submit]")
        page.wait_for_url(re.compile(r"/agreement/jobs/\d+/$"))
        expect(page.get_by_test_id("job-status")).to_have_text(re.compile("Queued|Running"))
        watch.check("the report queued")
        page.wait_for_url(re.compile(r"/agreement/\d+/$"), timeout=REPORT_TIMEOUT_MS)
        expect(page.locator("h1")).to_contain_text(title)
        snapshot = int(page.url.rstrip("/").rsplit("/", 1)[1])
        stored = site.query(
            "from agreement.models import ReportJob\n"
            "from agreement.services.report_page import wide_table\n"
            f"job = ReportJob.objects.get(snapshot_id={snapshot})\n"
            "rows = wide_table(job.snapshot.results, 'overall')\n"
            "print(json.dumps({'status': job.status, 'error': job.error, "
            "'estimates': [c['estimate_text'] for r in rows for c in r['cells'] "
            "if c and c.get('status') == 'ok']}))"
        )
        assert stored["status"] == "finished", stored
        assert stored["estimates"], f"the report has no estimate: {stored}"
        table = page.get_by_test_id("table2")
        expect(table).to_be_visible()
        shown = table.inner_text()
        for estimate in stored["estimates"]:
            assert estimate in shown, f"{estimate} (stored) is not on the page: {shown}"
        page.wait_for_load_state("networkidle")
        watch.check("the report page")
        return stored


def wrong_passwords_lock_out(browser: Browser, site: Site, *, account: str, limit: int) -> str:
    """`limit` wrong passwords lock `account` out, saying so; the right one is then refused
    with the same message. The message shown."""
    with browsing(browser, site) as (_, page, watch):
        with watch.allowing(r"\b429\b"):  # the lockout answers Too Many Requests
            for n in range(limit):
                log_in_locally(page, site, account, f"not-the-password-{n}")
                page.wait_for_load_state("load")
                if n < limit - 1:
                    expect(page.get_by_role("alert")).to_contain_text(
                        "username and password didn't match"
                    )
            locked = page.get_by_test_id("locked")
            expect(locked).to_contain_text(f"locked after {limit} failed log-ins")
            expect(locked).to_contain_text("It unlocks at ")
            log_in_locally(page, site, account, site.logins[account])
            page.wait_for_load_state("load")
            expect(page.get_by_test_id("locked")).to_contain_text(
                f"locked after {limit} failed log-ins"
            )
            message = page.get_by_test_id("locked").inner_text()
            page.goto(site.base + "/")
            assert "/accounts/login/" in page.url, "the right password got through a lockout"
            watch.check("the lockout")
        return message
