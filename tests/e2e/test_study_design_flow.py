"""A study designed and watched end to end in Chromium (issue 19, "Done when"): a coordinator
creates a study on the MedHELM taxonomy, adds four clinicians, imports 300 items (100 cases x
3 models, filed under four subcategories), asks the planning page how many items a precise
ICC needs, draws that many cases as a stratified paired sample, and deals it to the
clinicians from the dashboard. The clinicians log in and rate, one of them planted lenient
(1 or 2 points above what an honest rater gives); a real Celery worker refreshes the
agreement watch; the coordinator's dashboard then shows the clinician-clinician agreement so
far with its interval and the number of items, and flags the planted clinician alone.

Screenshots of every step go to /tmp/i19-flow/."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import numpy as np
import pytest
from django.contrib.auth.models import Permission
from playwright.sync_api import BrowserContext, Page, expect

from agreement.stats.planning import bonett_items
from annotation.models import AgreementWatch, Assignment, Item, RatingStudy, SampleDraw
from annotation.sampling import largest_remainder
from delphi.services import ensure_medhelm_taxonomy
from tests.factories import UserFactory
from tests.support import rating_page
from tests.support.axe import assert_accessible
from tests.support.browser import log_in
from tests.support.celery_worker import running_worker
from tests.support.watch_ratings import pseudonym_of

pytestmark = [
    pytest.mark.browser,
    pytest.mark.celery_worker,
    pytest.mark.slow,
    pytest.mark.django_db(transaction=True),
]

SHOTS = Path("/tmp/i19-flow")
MODELS = ("gpt-4o", "llama-3-70b", "claude-3-5-sonnet")
# (category, subcategory) of the MedHELM taxonomy -> cases; every model answers every case
LAYOUT = {
    ("Clinical Decision Support", "Supporting Diagnostic Decisions"): 40,
    ("Clinical Decision Support", "Planning Treatments"): 20,
    ("Clinical Note Generation", "Documenting Patient Visits"): 25,
    ("Patient Communication and Education", "Patient-Provider Messaging"): 15,
}
N_CASES = sum(LAYOUT.values())
# The plan: ICC(1) of 0.8 known to within a 95% interval 0.3 wide, three raters per item
PLANNED_ICC, PLANNED_WIDTH, K = 0.8, 0.3, 3
ADVICE = ("to rest and drink fluids", "to see the GP this week", "to seek urgent review")
SEED = 2026
RATED_IN_THE_PAGE = 2  # per clinician; the rest through the rater API the page also uses


def shot(page: Page, name: str) -> None:
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=True)


def items_file(path: Path) -> dict[tuple[str, str], float]:
    """Write the 300 items as JSON Lines; return each item's true quality on the 1-5 scale,
    (case, model) -> quality, which the clinicians' ratings scatter around."""
    rng = np.random.default_rng(SEED)
    quality, lines = {}, []
    for (_, subcategory), n in LAYOUT.items():
        for i in range(n):
            case = f"{subcategory.split()[0].lower()}-{i:03d}"
            for model in MODELS:
                quality[(case, model)] = float(rng.uniform(1.5, 3.3))
                lines.append(
                    json.dumps(
                        {
                            "id": case,
                            "model": model,
                            "task": subcategory,
                            "input": f"Case {case} ({subcategory}): what do you advise?",
                            "reference": f"The reference answer to case {case}.",
                            "output": f"Advice {ADVICE[MODELS.index(model)]} for case {case}.",
                        }
                    )
                )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return quality


class Panel:
    """What each clinician answers: an honest clinician gives the item's quality plus noise,
    rounded to the scale; the planted one gives 1 or 2 points more (within the scale). Seeded
    per (clinician, item, criterion), so the answers do not depend on the order of rating."""

    def __init__(self, quality: dict[tuple[str, str], float], lenient_id: int) -> None:
        self.quality = quality
        self.lenient_id = lenient_id

    def answers(self, assignment: Assignment, keys: list[str]) -> dict[str, int]:
        item = assignment.item
        out = {}
        for n, key in enumerate(keys):
            rng = np.random.default_rng([SEED, assignment.clinician_id, item.pk, n])
            value = int(
                np.clip(
                    np.rint(
                        self.quality[(item.external_id, item.model_name)] + rng.normal(0, 0.45)
                    ),
                    1,
                    5,
                )
            )
            if assignment.clinician_id == self.lenient_id:
                value = min(5, value + int(rng.integers(1, 3)))
            out[key] = value
        return out


def coordinator_sets_up_the_study(page: Page, live_server, clinicians: list) -> RatingStudy:
    page.get_by_role("link", name="Create a rating study").click()
    page.locator("input[name=name]").fill("Discharge advice study")
    page.get_by_label("Taxonomy version").select_option(label="MedHELM 2025")
    page.get_by_label("Ratings per item").fill(str(K))
    page.get_by_role("button", name="Create study").click()
    page.wait_for_url(re.compile(r"/studies/\d+/$"))
    study = RatingStudy.objects.get(name="Discharge advice study")
    assert study.ratings_per_item == K and study.taxonomy_version.name == "MedHELM 2025"

    page.get_by_role("link", name="Members", exact=True).click()
    for clinician in clinicians:
        page.get_by_label("Username").fill(clinician.username)
        page.get_by_label("Role").select_option("clinician")
        page.get_by_role("button", name="Add").click()
        expect(page.locator(".messages")).to_contain_text(f"{clinician.username} is clinician")
    shot(page, "01-members")
    return study


def coordinator_imports(page: Page, study: RatingStudy, upload: Path) -> None:
    page.get_by_role("link", name="Import items", exact=True).click()
    page.set_input_files("input[type=file]", str(upload))
    page.get_by_role("button", name="Import", exact=True).click()
    expect(page.get_by_test_id("import-status")).to_contain_text("succeeded")
    expect(page.get_by_test_id("import-progress")).to_contain_text(
        f"{N_CASES * len(MODELS)} items created"
    )
    shot(page, "02-imported")
    filed = Item.objects.filter(study=study).values_list("taxonomy_node__name", flat=True)
    assert sorted(set(filed)) == sorted(sub for _, sub in LAYOUT)


def coordinator_plans(page: Page, live_server, study: RatingStudy) -> int:
    """The planning page's answer: items (per model) for the planned interval."""
    page.get_by_role("link", name="Plan the sample", exact=True).first.click()
    page.wait_for_url(f"{live_server.url}/studies/{study.pk}/agreement/plan/")
    precision = page.get_by_test_id("plan-precision")
    expect(precision.get_by_label("Raters per item (k)")).to_have_value(str(K))
    precision.get_by_label("Planned ICC(1)").fill(str(PLANNED_ICC))
    precision.get_by_label("Full width of the interval").fill(str(PLANNED_WIDTH))
    precision.get_by_role("button", name="Items needed").click()
    answer = page.get_by_test_id("plan-precision").get_by_test_id("plan-items")
    expect(answer).to_have_text(re.compile(r"^\d+$"))
    shot(page, "03-plan")
    n = int(answer.inner_text())
    assert n == bonett_items(PLANNED_ICC, K, PLANNED_WIDTH).n_items
    return n


def strata_rows(table) -> dict[str, tuple[int, int, int]]:
    rows = {}
    for row in table.locator("tbody tr").all():
        label, *numbers = (c.inner_text().strip() for c in row.locator("td").all())
        rows[label] = tuple(int(x) for x in numbers)
    return rows


def coordinator_draws(page: Page, live_server, study: RatingStudy, cases: int) -> set[int]:
    """A proportional paired draw of ``cases`` cases, stratified by category and subcategory
    (the page's defaults); the allocation shown is checked against the largest-remainder
    rule on the imported strata. Returns the drawn item ids."""
    page.get_by_role("link", name="Draw the sample", exact=True).first.click()
    page.wait_for_url(f"{live_server.url}/studies/{study.pk}/sample/")
    form = page.get_by_test_id("draw-form")
    for key in ("Category", "Subcategory", "Model"):
        expect(form.get_by_label(key, exact=True)).to_be_checked()
    expect(
        form.get_by_label("Paired: draw cases and take every model's output for each")
    ).to_be_checked()
    form.get_by_label("Total to draw (cases when paired, else items)").fill(str(cases))
    form.get_by_label("Seed (blank: a new one, shown in the preview)").fill(str(SEED))
    form.get_by_role("button", name="Preview the allocation").click()
    expect(page.get_by_test_id("preview-total")).to_have_text(str(cases))
    populations = {f"{cat} / {sub}": n for (cat, sub), n in LAYOUT.items()}
    wanted = largest_remainder(populations, cases)
    expected = {
        label: (populations[label], wanted[label], wanted[label] * len(MODELS))
        for label in populations
    }
    assert strata_rows(page.get_by_test_id("preview-strata")) == expected
    shot(page, "04-sample-preview")

    page.get_by_role("button", name="Confirm this draw").click()
    current = page.get_by_test_id("current-draw")
    expect(page.get_by_test_id("draw-seed")).to_have_text(str(SEED))
    expect(page.get_by_test_id("draw-items")).to_have_text(str(cases * len(MODELS)))
    assert strata_rows(current.locator("table")) == expected
    expect(current).to_contain_text("Every drawn case has an output from every model.")
    shot(page, "05-sample-drawn")
    assert_accessible(page, "the sampling page with a draw not dealt yet")
    record = SampleDraw.objects.get(study=study)
    drawn = set(record.items.values_list("pk", flat=True))
    by_case: dict[str, set[str]] = {}
    for case, model in Item.objects.filter(pk__in=drawn).values_list("external_id", "model_name"):
        by_case.setdefault(case, set()).add(model)
    assert len(by_case) == cases and all(m == set(MODELS) for m in by_case.values())
    return drawn


def coordinator_deals(page: Page, live_server, study: RatingStudy, drawn: set[int]) -> int:
    """The sample page says the draw is not dealt yet and deals it (to the dashboard)."""
    expect(page.get_by_test_id("draw-not-dealt")).to_contain_text("Not dealt yet")
    page.get_by_role("button", name="Deal the drawn items to the 4 clinicians").click()
    page.wait_for_url(f"{live_server.url}/studies/{study.pk}/")
    dealt = len(drawn) * K
    expect(page.locator(".messages")).to_contain_text(
        f"Assignments balanced: {dealt} unstarted assignments dealt."
    )
    expect(page.get_by_test_id("overall")).to_have_text(f"0 of {dealt} assignments submitted")
    expect(page.get_by_test_id("drawn")).to_have_text(
        f"{len(drawn)} drawn for clinicians (stratified sample, seed {SEED})"
    )
    shot(page, "06-assigned")
    assigned = set(Assignment.objects.filter(study=study).values_list("item_id", flat=True))
    assert assigned == drawn
    return dealt


def rate_in_the_page(page: Page, study: RatingStudy, panel: Panel, keys: list[str]) -> None:
    """One item through the rating page: the form's radios, then Submit."""
    handle = page.locator("#rating-form").get_attribute("data-assignment")
    assignment = Assignment.objects.select_related("item").get(handle=handle)
    for key, value in panel.answers(assignment, keys).items():
        rating_page.radio(page, key, value).check()
    page.locator("#submit-button").click()
    rating_page.wait_until(
        page,
        lambda: rating_page.status_of(assignment) == Assignment.Status.SUBMITTED,
        f"assignment {handle} is submitted",
    )
    # the page moves on to the clinician's next unfinished item
    expect(page.locator("#rating-form")).not_to_have_attribute("data-assignment", handle)
    expect(page.locator(".messages")).to_contain_text("is submitted.")


class Rater:
    """A clinician logged in in a browser context of their own, rating their queue: the
    first items in the rating page, the rest through the rater API that the page's own
    scripts call, with the same session cookie and the page's CSRF token (to keep the run
    short: about 150 submissions)."""

    def __init__(self, context: BrowserContext, live_server, user, study: RatingStudy):
        self.context, self.live_server, self.user, self.study = context, live_server, user, study
        self.keys = list(study.criteria.values_list("key", flat=True))
        self.page = rating_page.log_in(context, live_server, user.username)
        self.csrf = ""
        self.open: list[str] = []

    def rate_in_the_page(self, panel: Panel, n: int, *, shoot: bool) -> None:
        self.page.get_by_role("link", name="Continue rating").click()
        self.page.wait_for_url(re.compile(rf"/studies/{self.study.pk}/rate/[\w-]+/$"))
        for i in range(n):
            if shoot and i == 0:
                shot(self.page, "07-rating-page")
            rate_in_the_page(self.page, self.study, panel, self.keys)
        self.csrf = self.page.locator("input[name=csrfmiddlewaretoken]").first.get_attribute(
            "value"
        )
        queue = self.context.request.get(
            f"{self.live_server.url}/api/studies/{self.study.pk}/queue/"
        )
        assert queue.ok, queue.text()
        self.open = [e["handle"] for e in queue.json() if e["status"] != "submitted"]

    def submit_next(self, panel: Panel) -> bool:
        """Submit the next open assignment through the API; False when none is left."""
        if not self.open:
            return False
        handle = self.open.pop(0)
        assignment = Assignment.objects.select_related("item").get(handle=handle)
        body = {
            "answers": {k: {"value": v} for k, v in panel.answers(assignment, self.keys).items()},
            "time_spent_seconds": 20.0,
        }
        response = self.context.request.post(
            f"{self.live_server.url}/api/assignments/{handle}/submit/",
            data=json.dumps(body),
            headers={"Content-Type": "application/json", "X-CSRFToken": self.csrf},
        )
        assert response.ok, response.text()
        return True


def test_a_coordinator_designs_a_study_and_the_watch_flags_the_planted_lenient_rater(
    live_server, page, new_context, tmp_path, settings
):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.MEDHELM_WATCH_DEBOUNCE_SECONDS = 0.5
    ensure_medhelm_taxonomy()
    coordinator = UserFactory(username="coordinator")
    coordinator.user_permissions.add(Permission.objects.get(codename="add_ratingstudy"))
    clinicians = [UserFactory(username=f"clinician-{n}") for n in range(1, 5)]
    lenient = clinicians[1]
    quality = items_file(tmp_path / "items.jsonl")
    panel = Panel(quality, lenient.pk)

    started = time.monotonic()
    log_in(page, live_server, coordinator.username)
    study = coordinator_sets_up_the_study(page, live_server, clinicians)
    coordinator_imports(page, study, tmp_path / "items.jsonl")
    cases = coordinator_plans(page, live_server, study)
    drawn = coordinator_draws(page, live_server, study, cases)
    dealt = coordinator_deals(page, live_server, study, drawn)

    raters = [Rater(new_context(), live_server, c, study) for c in clinicians]
    for n, rater in enumerate(raters):
        rater.rate_in_the_page(panel, RATED_IN_THE_PAGE, shoot=n == 0)
    # the rest in turns, as ratings arrive in a running study (the drift table's batches)
    while any([rater.submit_next(panel) for rater in raters]):
        pass
    assert Assignment.objects.filter(study=study, status="submitted").count() == dealt

    # no worker yet: the dashboard says the figures are coming, without computing them
    dashboard = f"{live_server.url}/studies/{study.pk}/"
    page.goto(dashboard)
    watch = page.get_by_test_id("agreement-watch")
    expect(watch.get_by_test_id("watch-updating")).to_have_text("updating…")
    shot(page, "08-dashboard-updating")

    # the refresh the ratings queued, run by a real worker (as in production)
    with running_worker(
        broker_url=settings.CELERY_BROKER_URL,
        result_backend=settings.CELERY_RESULT_BACKEND,
        log_path=tmp_path / "worker.log",
    ):
        deadline = time.time() + 90
        while time.time() < deadline:
            w = AgreementWatch.objects.get(study=study)
            if w.computed_at is not None and w.requested_at is None:
                break
            time.sleep(0.2)
        else:
            pytest.fail((tmp_path / "worker.log").read_text())
    w = AgreementWatch.objects.get(study=study)
    assert w.submissions_seen == dealt, w.error

    page.goto(dashboard)
    expect(watch.get_by_test_id("watch-updating")).to_have_count(0)
    expect(watch.get_by_test_id("watch-time")).to_contain_text(
        f"from {dealt} submitted assignments"
    )
    figures = watch.get_by_test_id("watch-panel")
    expect(figures).to_contain_text("Clinician\N{EN DASH}clinician agreement")
    expect(watch.get_by_test_id("watch-items")).to_have_text(str(len(drawn)))
    found = re.search(
        r"agreement: (-?[\d.]+) \(95% CI (-?[\d.]+) to (-?[\d.]+)\)", figures.inner_text()
    )
    assert found, figures.inner_text()
    estimate, low, high = (float(x) for x in found.groups())
    stored = w.summary["panel"]
    assert abs(estimate - stored["estimate"]) <= 0.005 + 1e-9
    assert low <= estimate <= high and high - low > 0

    raters = watch.get_by_test_id("watch-raters")
    expect(raters.locator("tbody tr")).to_have_count(len(clinicians))
    for clinician in clinicians:
        row = raters.locator(f"tbody tr[data-rater='{pseudonym_of(study, clinician.pk)}']")
        flag = "lenient" if clinician is lenient else "\N{EN DASH}"
        expect(row.get_by_test_id("watch-flag")).to_have_text(flag)
    watch.scroll_into_view_if_needed()
    shot(page, "09-dashboard-watch")
    assert_accessible(page, "the dashboard with the agreement watch")
    assert time.monotonic() - started < 180, "the flow took longer than three minutes"
