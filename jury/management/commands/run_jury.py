"""Start, resume or watch a jury run from the command line, with a progress bar."""

from __future__ import annotations

import sys
import time
from concurrent.futures import ThreadPoolExecutor

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from annotation.models import RatingStudy
from jury import selectors, services
from jury.errors import JuryError
from jury.execution import execute_call
from jury.execution.sweep import sweep_settings
from jury.models import Judge, JudgeCall, JuryRun, PromptTemplate


def bar(done: int, total: int, width: int = 30) -> str:
    filled = int(width * done / total) if total else width
    return "[" + "#" * filled + "." * (width - filled) + "]"


class Command(BaseCommand):
    help = "Run the LLM jury on a study (or resume/watch a run) and show its progress."

    def add_arguments(self, parser) -> None:
        parser.add_argument("--study", type=int, help="study id (to start a run)")
        parser.add_argument(
            "--judge", action="append", default=[], help="judge name; repeat for several"
        )
        parser.add_argument(
            "--template", help="prompt template as name:version (default: MedHELM default)"
        )
        parser.add_argument("--models", help="only these evaluated models, comma-separated")
        parser.add_argument("--taxonomy-node", type=int)
        parser.add_argument(
            "--resume", type=int, metavar="RUN", help="score what is missing or failed in RUN"
        )
        parser.add_argument("--watch", type=int, metavar="RUN", help="only show RUN's progress")
        parser.add_argument("--cancel", type=int, metavar="RUN")
        parser.add_argument(
            "--inline",
            type=int,
            default=0,
            metavar="THREADS",
            help="execute the calls in this process with THREADS threads instead of Celery workers",
        )

    def handle(self, *args, **o) -> None:
        if o["cancel"]:
            run = self._run(o["cancel"])
            services.cancel_run(run=run, actor=None)
            self.stdout.write(f"Run {run.pk} cancelled.")
            return
        dispatch = not o["inline"]
        if o["watch"]:
            run = self._run(o["watch"])
        elif o["resume"]:
            run = self._run(o["resume"])
            n = services.resume_run(run=run, actor=None, dispatch=dispatch)
            self.stdout.write(f"Run {run.pk}: {n} calls to score again.")
            truncated = selectors.truncated_calls(run=run)
            if truncated:
                self.stdout.write(
                    f"{truncated} truncated calls not sent again: the same request would be "
                    "cut again. Raise their judge's max_tokens, then resume."
                )
        else:
            run = self._start(o, dispatch)
            self.stdout.write(f"Run {run.pk} started: {run.calls.count()} calls.")
        if o["inline"]:
            pending = list(
                run.calls.filter(status=JudgeCall.Status.PENDING).values_list("pk", flat=True)
            )
            with ThreadPoolExecutor(max_workers=o["inline"]) as pool:
                futures = [pool.submit(execute_call, call_id=pk) for pk in pending]
                while not all(f.done() for f in futures):
                    self._show(run)
                    time.sleep(0.5)
                for f in futures:
                    f.result()
        self._watch(run)

    def _run(self, pk: int) -> JuryRun:
        run = JuryRun.objects.filter(pk=pk).first()
        if run is None:
            raise CommandError(f"no jury run {pk}")
        return run

    def _start(self, o, dispatch: bool) -> JuryRun:
        study = RatingStudy.objects.filter(pk=o["study"]).first() if o["study"] else None
        if study is None:
            raise CommandError("give --study ID (or --resume / --watch RUN)")
        judges = list(Judge.objects.filter(name__in=o["judge"]))
        missing = set(o["judge"]) - {j.name for j in judges}
        if missing or not judges:
            known = ", ".join(Judge.objects.values_list("name", flat=True)) or "none"
            raise CommandError(
                f"unknown judges {sorted(missing) or '(none given)'}; known: {known}"
            )
        template = None
        if o["template"]:
            name, _, version = o["template"].partition(":")
            template = PromptTemplate.objects.filter(name=name, version=int(version or 1)).first()
            if template is None:
                raise CommandError(f"no prompt template {o['template']}")
        filters = {}
        if o["models"]:
            filters["models"] = [m.strip() for m in o["models"].split(",")]
        if o["taxonomy_node"]:
            filters["taxonomy_node"] = o["taxonomy_node"]
        try:
            return services.start_run(
                study=study,
                judges=judges,
                template=template,
                filters=filters,
                actor=None,
                dispatch=dispatch,
            )
        except JuryError as exc:
            raise CommandError(str(exc)) from exc

    _last_line = ""

    def _show(self, run: JuryRun) -> tuple[selectors.RunProgress, selectors.RunWaiting | None]:
        """Redraw the bar in a terminal; in a log, write a line only when progress moves.
        Returns the progress and the run's wait for a worker, if any (shown instead of what
        is left)."""
        p = selectors.run_progress(run=run)
        waiting = selectors.run_waiting(run=run)
        eta = f" ETA {p.eta_seconds:.0f}s" if p.eta_seconds is not None and not waiting else ""
        left = waiting.text if waiting else f"{p.remaining} left"
        status = (
            f"{bar(p.done, p.total)} {p.done}/{p.total} done, {p.failed} failed, {left}, "
            f"{p.input_tokens + p.output_tokens} tokens, ${p.cost:.4f}"
        )
        if self.stdout.isatty():
            self.stdout.write(f"\r{status}{eta}   ", ending="")
        elif status != self._last_line:
            self.stdout.write(f"{status}{eta}")
        self._last_line = status
        self._show_outages(run)
        self.stdout.flush()
        return p, waiting

    _last_outages: tuple = ()

    def _show_outages(self, run: JuryRun) -> None:
        """A line when a provider of the run becomes unreachable, and when it is back."""
        outages = selectors.provider_outages(run=run)
        key = tuple((o.judges, o.since) for o in outages)
        if key == self._last_outages:
            return
        lead = "\n" if self.stdout.isatty() else ""
        for outage in outages:
            self.stdout.write(f"{lead}  {', '.join(outage.judges)}: {outage.reason}")
        back = {judges for judges, _ in self._last_outages} - {o.judges for o in outages}
        for judges in sorted(back):
            self.stdout.write(f"{lead}  {', '.join(judges)}: provider reachable again")
        self._last_outages = key

    def _watch(self, run: JuryRun) -> None:
        stall_limit = sweep_settings().ends_a_stall_within_seconds
        while True:
            run.refresh_from_db()
            p, waiting = self._show(run)
            if run.status not in (JuryRun.Status.QUEUED, JuryRun.Status.RUNNING) or not p.remaining:
                break
            if waiting and (timezone.now() - waiting.since).total_seconds() > stall_limit:
                # The sweep would have ended these calls by now: it is not running.
                if self.stdout.isatty():
                    self.stdout.write("")
                self.stdout.write(
                    f"Run {run.pk} stalled: {waiting.text}, longer than the sweep allows "
                    f"({stall_limit:.0f} s). Is a Celery worker with beat running? "
                    f"Watch again with --watch {run.pk}, or --resume {run.pk}."
                )
                break
            time.sleep(1)
        if self.stdout.isatty():
            self.stdout.write("")
        for h in selectors.judge_health(run=run):
            statuses = ", ".join(f"{k} {v}" for k, v in sorted(h.by_status.items()))
            self.stdout.write(f"  {h.judge}: {statuses}; failure rate {h.failure_rate:.0%}")
        self._show_errors(run)
        self.stdout.write(f"Run {run.pk}: {run.status}.")
        sys.stdout.flush()

    def _show_errors(self, run: JuryRun) -> None:
        """The run's top error reasons over every attempt (resumed calls' earlier ones too)."""
        errors = selectors.run_errors(run=run)
        if not errors.failed:
            return
        self.stdout.write(
            f"Top error reasons ({errors.failed} of {errors.attempts} attempts failed):"
        )
        for e in errors.top:
            self.stdout.write(f"  {e.count:>6}  {e.kind}: {e.reason or '(no message)'}")
