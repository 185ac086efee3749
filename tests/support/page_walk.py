"""The pages every role opens, as the browser walks test them (axe, CSP).

The pages come from the URL conf: a walk's `test_every_route_is_visited_or_left_out...`
fails (through `forgotten_routes`) when a route is neither in PAGES nor in LEFT_OUT, so a
new page cannot be forgotten. `World` builds the data each page needs on first use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.contrib.auth import get_user_model
from django.urls import URLPattern, URLResolver, get_resolver

from tests.factories import UserFactory

# --------------------------------------------------------------------------- routes


def _routes(resolver: URLResolver, namespace: str = "") -> dict[str, str]:
    """Every named route of the URL conf, "namespace:name" -> its pattern."""
    found: dict[str, str] = {}
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            inner = f"{namespace}{entry.namespace}:" if entry.namespace else namespace
            for name, route in _routes(entry, inner).items():
                found.setdefault(name, str(entry.pattern) + route)
        elif isinstance(entry, URLPattern) and entry.name:
            found.setdefault(namespace + entry.name, str(entry.pattern))
    return found


# Routes that are not pages a role opens, each with why.
LEFT_OUT_PREFIXES = {
    "admin:": "Django's own admin site (its templates are Django's, not the project's)",
    "agreement-api:": "JSON API, not a page",
    "annotation-api:": "JSON API, not a page",
    "api:": "JSON API, not a page",
    "accounts-api:": "JSON API, not a page",
}
LEFT_OUT = {
    "api-schema": "OpenAPI schema (YAML), not a page",
    "healthz": "a JSON liveness probe, not a page (tests/site/test_health.py)",
    "readyz": "a JSON readiness probe, not a page (tests/site/test_health.py)",
    "logout": "POST only; ends on the login page, which is visited",
    "sso-start": "redirects to the OpenID provider (404 while SSO is off); the sign-in flow "
    "is walked in Chromium by tests/e2e/test_sso.py",
    "sso-callback": "the OpenID provider's redirect back (404 while SSO is off); walked by "
    "tests/e2e/test_sso.py, ending on the login page or home",
    "account-token-revoke": "POST only (a form on the API tokens page)",
    "annotation:assign": "POST only (an action on the dashboard)",
    "annotation:lock": "POST only (an action on the dashboard)",
    "annotation:watch-refresh": "POST only (an action on the dashboard)",
    "annotation:export": "a file download (CSV/JSON), not a page",
    "annotation:export-ratings-long": "a CSV download, not a page",
    "annotation:export-checks": "a CSV download (attention-check results), not a page",
    "annotation:import-errors": "a CSV download (every problem of a ratings or scores "
    "import), not a page",
    "annotation:audit-export": "a CSV download (the audit log's rows), not a page",
    "annotation:resume": "redirects to annotation:rate, which is visited",
    "jury:export-scores-long": "a CSV download, not a page",
    "jury:run-calls": "a CSV download, not a page",
    "jury:run-attempts": "a CSV download, not a page",
    "jury:run-action": "POST only (cancel, retry on the run page)",
    "jury:metrics-start": "POST only (starts the missing metrics from the report's status "
    "panel or the jury page)",
    "agreement:recompute": "POST only (an action on the report page)",
    "agreement:archive": "a zip download (the study archive), not a page",
    "agreement:export": "a file download (CSV, JSON, PDF, figures), not a page",
    "agreement:job-status": "JSON polled by the job page, not a page",
    "agreement:plan-simulation-status": "JSON status of a queued simulation (its page "
    "refreshes itself and is visited), not a page",
    "agreement:plan-simulation-cancel": "POST only (a button on a queued simulation's page)",
    "agreement:machine-status": "an HTML fragment the report page fetches into its status "
    "panel (checked there, inside the report page)",
    "agreement:figure": "a figure file download (SVG, PDF, PNG), not a page",
    "agreement:scores": "a score table download (CSV, Parquet, Markdown dictionary), not a page",
    "jury:run-status": "JSON polled by the jury run page, not a page",
    "delphi:protocol_taxonomy": "POST only (a form on the protocol page)",
    "delphi:protocol_lock": "POST only (a form on the protocol page)",
    "delphi:panelist_renew": "POST only (a form on the panel page)",
    "delphi:panelist_withdraw": "POST only (a form on the panel page)",
    "delphi:round_next": "POST only (a form on the study page)",
    "delphi:round_open": "POST only (a form on the round page)",
    "delphi:round_remind": "POST only (a form on the round page)",
    "delphi:round_close": "POST only (a form on the round page)",
    "delphi:round_analyse": "POST only (a form on the round page)",
    "delphi:round_feedback": "POST only (a form on the round page)",
    "delphi:round_triage": "POST only (a form on the round page)",
    "delphi:finish": "POST only (a form on the study page)",
    "delphi:release": "POST only (a form on the study page)",
    "delphi:export": "file downloads (CSV, PDF, HTML report); export_error is reached by a "
    "failing export only",
    "delphi:panel_draft": "JSON autosave endpoint, not a page",
    "delphi:panel_suggest": "POST only (the suggestion form on the questionnaire)",
}


def left_out(name: str) -> str | None:
    for prefix, why in LEFT_OUT_PREFIXES.items():
        if name.startswith(prefix):
            return why
    return LEFT_OUT.get(name)


# --------------------------------------------------------------------------- the data


class World:
    """One rating study (coordinator, clinicians, researcher, ratings, judges, a jury run, a
    report), one Delphi study in round 2 with round-1 feedback, and a staff user. Each part
    is built when a case first needs it."""

    @cached_property
    def rating(self) -> Any:
        from tests.agreement.factories import build_study

        return build_study()

    @cached_property
    def report_job(self) -> Any:
        from agreement import services

        return services.request_report(
            study=self.rating.study,
            actor=self.rating.members.researcher,
            parameters={"n_resamples": 20, "seed": 3},
            background=False,
        )

    @cached_property
    def queued_job(self) -> Any:
        """A report job no worker has taken yet: its page shows the stage and progress."""
        from agreement import services

        return services.request_report(
            study=self.rating.study,
            actor=self.rating.members.researcher,
            parameters={"n_resamples": 20, "seed": 3},
            background=True,
        )

    @cached_property
    def attention_check(self) -> Any:
        """The rating study's first item planted as an attention check (its raters' results
        fill the checks page's table)."""
        from annotation import services

        return services.mark_attention_check(
            study=self.rating.study,
            item_id=self.rating.items[0].pk,
            expected={"accuracy": (4, 5)},
            note="planted",
            actor=self.rating.members.coordinator,
        )

    @cached_property
    def calibration(self) -> Any:
        """A new item of the rating study marked as a calibration item (fills the
        calibration page), which the clinician has rated: their comparison page shows it."""
        from annotation import services
        from annotation.models import Assignment
        from tests.factories import FULL_ANSWERS, item_rows

        study = self.rating.study
        coordinator = self.rating.members.coordinator
        services.create_items(study=study, rows=item_rows(1, prefix="calib"), actor=coordinator)
        item = study.items.get(external_id="calib-0000")
        calibration = services.mark_calibration_item(
            study=study,
            item_id=item.pk,
            reference={"accuracy": 4, "completeness": 2},
            note="agreed by two senior clinicians",
            actor=coordinator,
        )
        mine = Assignment.objects.get(item=item, clinician=self.clinician)
        services.submit_assignment(
            assignment_id=mine.pk, clinician=self.clinician, answers=FULL_ANSWERS
        )
        services.advance_calibration(study=study, clinician=self.clinician)
        return calibration

    @cached_property
    def jury_run(self) -> Any:
        from jury import services

        return services.start_run(
            study=self.rating.study,
            judges=self.rating.judges[:1],
            actor=self.rating.members.coordinator,
            dispatch=False,
        )

    @cached_property
    def handle(self) -> str:
        from annotation.models import Assignment

        assignment = (
            Assignment.objects.filter(
                study=self.rating.study, clinician=self.clinician, status="pending"
            ).first()
            or Assignment.objects.filter(study=self.rating.study, clinician=self.clinician).first()
        )
        return assignment.handle

    @property
    def clinician(self) -> Any:
        return self.rating.members.clinicians[0]

    @cached_property
    def delphi(self) -> Any:
        from delphi import services
        from tests.delphi.flow import BASE_URL, answer_all, make_panel_study

        built = make_panel_study(n_panelists=3, ask_reason_outside_iqr=True)
        actor = built.coordinator
        round1 = built.round(1)
        services.open_round(round_=round1, actor=actor, base_url=BASE_URL)
        answer_all(built, round1, {"Diagnosis": [4, 5, 6]})
        services.close_round(round_=round1, actor=actor)
        services.analyse_round(round_=round1, actor=actor)
        services.release_feedback(round_=round1, actor=actor)
        round2 = services.start_next_round(study=built.study, actor=actor)
        services.open_round(round_=round2, actor=actor, base_url=BASE_URL)
        return built

    @cached_property
    def invitation(self) -> str:
        from delphi import services
        from tests.delphi.flow import BASE_URL

        _panelist, token = services.invite_panelist(
            study=self.delphi.study,
            actor=self.delphi.coordinator,
            email="late-panelist@example.org",
            base_url=BASE_URL,
            stakeholder_group="clinician",
            specialty="cardiology",
        )
        return token

    @cached_property
    def staff(self) -> Any:
        return get_user_model().objects.create_superuser(
            username="axe-staff", email="staff@example.org", password=_password()
        )

    def user(self, role: str) -> Any:
        return {
            "clinician": lambda: self.clinician,
            "coordinator": lambda: self.rating.members.coordinator,
            "researcher": lambda: self.rating.members.researcher,
            "delphi-coordinator": lambda: self.delphi.coordinator,
            "panelist": lambda: self.delphi.panelists[0].user,
            "newcomer": lambda: UserFactory(username="axe-newcomer"),
            "staff": lambda: self.staff,
        }[role]()


def _password() -> str:
    from tests.factories import TEST_PASSWORD

    return TEST_PASSWORD


# --------------------------------------------------------------------------- the pages


@dataclass(frozen=True)
class Visit:
    route: str
    role: str  # "anonymous" or a World.user role
    kwargs: Callable[[World], dict[str, Any]] = lambda w: {}
    status: int = 200  # what the page answers

    @property
    def id(self) -> str:
        return f"{self.route}[{self.role}]"


def _study(w: World) -> dict[str, Any]:
    return {"study_id": w.rating.study.pk}


def _delphi(w: World) -> dict[str, Any]:
    return {"study_id": w.delphi.study.pk}


PAGES = [
    # anonymous
    Visit("login", "anonymous"),
    Visit("password_reset", "anonymous"),
    Visit("password_reset_done", "anonymous"),
    Visit("password_reset_confirm", "anonymous", lambda w: {"uidb64": "MQ", "token": "bad-token"}),
    Visit("password_reset_complete", "anonymous"),
    Visit("delphi:join", "anonymous", lambda w: {"token": w.invitation}),
    Visit("delphi:join", "newcomer", lambda w: {"token": w.invitation}),
    Visit("delphi:join", "newcomer", lambda w: {"token": "no-such-invitation"}, status=404),
    # every role's home page, and the account pages
    Visit("home", "clinician"),
    Visit("home", "coordinator"),
    Visit("home", "researcher"),
    Visit("home", "panelist"),
    Visit("home", "delphi-coordinator"),
    Visit("home", "staff"),
    Visit("home", "newcomer"),
    Visit("password_change", "clinician"),
    Visit("password_change_done", "clinician"),
    Visit("account-tokens", "clinician"),
    Visit("account-lockouts", "coordinator"),
    Visit("account-lockouts", "staff"),
    # rating studies
    Visit("annotation:create", "staff"),
    Visit(
        "annotation:study",
        "coordinator",
        _study,
    ),
    Visit(
        "annotation:study",
        "researcher",
        _study,
    ),
    Visit("annotation:settings", "coordinator", _study),
    Visit("annotation:audit", "coordinator"),
    Visit("annotation:audit", "staff"),
    Visit("annotation:members", "coordinator", _study),
    Visit(
        "annotation:import",
        "coordinator",
        _study,
    ),
    Visit(
        "annotation:import-ratings",
        "coordinator",
        _study,
    ),
    Visit("annotation:sample", "coordinator", _study),
    Visit(
        "annotation:checks",
        "coordinator",
        lambda w: {"study_id": w.attention_check.study_id},
    ),
    Visit(
        "annotation:calibration",
        "coordinator",
        lambda w: {"study_id": w.calibration.study_id},
    ),
    Visit(
        "annotation:my-calibration",
        "clinician",
        lambda w: {"study_id": w.calibration.study_id},
    ),
    Visit("annotation:queue", "clinician", _study),
    Visit(
        "annotation:rate",
        "clinician",
        lambda w: {"study_id": w.rating.study.pk, "handle": w.handle},
    ),
    # jury
    Visit(
        "jury:runs",
        "coordinator",
        _study,
    ),
    Visit(
        "jury:runs",
        "researcher",
        _study,
    ),
    Visit(
        "jury:run",
        "coordinator",
        lambda w: {"study_id": w.rating.study.pk, "run_id": w.jury_run.pk},
    ),
    Visit(
        "annotation:item",
        "coordinator",
        lambda w: {"study_id": w.rating.study.pk, "item_id": w.rating.items[0].pk},
    ),
    Visit("jury:prompt", "coordinator", _study),
    Visit(
        "jury:import-scores",
        "coordinator",
        _study,
    ),
    # agreement
    Visit("agreement:reports", "researcher", _study),
    Visit("agreement:reports", "coordinator", _study),
    Visit(
        "agreement:report",
        "researcher",
        lambda w: {"study_id": w.rating.study.pk, "report_id": w.report_job.snapshot_id},
    ),
    Visit(
        "agreement:job",
        "researcher",
        lambda w: {"study_id": w.rating.study.pk, "job_id": w.queued_job.pk},
    ),
    Visit("agreement:plan", "coordinator", _study),
    Visit(
        "agreement:plan-simulation",
        "coordinator",
        lambda w: {"study_id": w.rating.study.pk, "task_id": "not-yet-taken"},
    ),
    # Delphi
    Visit("delphi:create", "staff"),
    Visit("delphi:study", "delphi-coordinator", _delphi),
    Visit("delphi:protocol", "delphi-coordinator", _delphi),
    Visit("delphi:panelists", "delphi-coordinator", _delphi),
    Visit(
        "delphi:round_detail",
        "delphi-coordinator",
        lambda w: {"study_id": w.delphi.study.pk, "number": 1},
    ),
    Visit(
        "delphi:round_detail",
        "delphi-coordinator",
        lambda w: {"study_id": w.delphi.study.pk, "number": 2},
    ),
    Visit("delphi:panel_round", "panelist", _delphi),
]


def forgotten_routes() -> tuple[list[str], list[str]]:
    """(routes neither visited nor left out, names here that the URL conf no longer has)."""
    routes = _routes(get_resolver())
    visited = {page.route for page in PAGES}
    forgotten = sorted(name for name in routes if name not in visited and not left_out(name))
    stale = sorted(name for name in [*visited, *LEFT_OUT] if name not in routes)
    return forgotten, stale


#: Every image of the page loaded (lazy ones too); the addresses of those that did not load.
LOAD_IMAGES = """async () => {
  const images = [...document.images];
  images.forEach((i) => { i.loading = "eager"; });
  await Promise.all(images.map((i) => i.complete ? null
    : new Promise((done) => { i.addEventListener("load", done); i.addEventListener("error", done); })));
  return images.filter((i) => !i.naturalWidth).map((i) => i.src);
}"""
