"""What the run page polls (and renders first): its progress, the wait for a worker, the
time left as words, and which actions apply."""

from __future__ import annotations

from jury.models import JudgeCall, JuryRun
from jury.selectors.progress import RunProgress, judge_health, run_progress
from jury.selectors.waiting import run_waiting

#: Call statuses a resume sends again (jury.services.RETRIED_ON_RESUME), and truncated ones
#: (sent again when their judge's request changed; otherwise the resume says why not).
RESUMABLE_CALLS = (
    JudgeCall.Status.PROVIDER_ERROR,
    JudgeCall.Status.TIMEOUT,
    JudgeCall.Status.TRUNCATED,
)


def can_resume(*, run: JuryRun, progress: RunProgress) -> bool:
    """Resume is offered for a stopped (cancelled) or failed run, and for a finished one
    whose calls failed in a way a resume retries; never while the run is queued or running."""
    if run.status in (JuryRun.Status.CANCELLED, JuryRun.Status.FAILED):
        return True
    if run.status == JuryRun.Status.FINISHED:
        return any(progress.by_status.get(s, 0) for s in RESUMABLE_CALLS)
    return False


def eta_text(progress: RunProgress) -> str:
    """The time left as the run page says it: "about 40 s left", "about 12 min left",
    "time left: estimating…", or "" when the run is not under way."""
    if progress.eta_state == "estimating":
        return "time left: estimating…"
    if progress.eta_state != "known" or progress.eta_seconds is None:
        return ""
    seconds = progress.eta_seconds
    if seconds < 90:
        return f"about {max(1, round(seconds))} s left"
    if seconds < 90 * 60:
        return f"about {round(seconds / 60)} min left"
    return f"about {seconds / 3600:.1f} h left"


def run_status(*, run: JuryRun) -> dict[str, object]:
    """What the run page polls (and renders first): counts, state, time left, the wait for a
    worker, and which actions apply."""
    progress = run_progress(run=run)
    waiting = run_waiting(run=run)
    return {
        "id": run.pk,
        "status": run.status,
        "status_display": run.get_status_display(),
        "live": run.status in (JuryRun.Status.QUEUED, JuryRun.Status.RUNNING),
        "total": progress.total,
        "done": progress.done,
        "ok": progress.ok,
        "failed": progress.failed,
        "remaining": progress.remaining,
        "cached": progress.cached,
        "percent": progress.percent,
        "input_tokens": progress.input_tokens,
        "output_tokens": progress.output_tokens,
        "cost": f"{progress.cost:.4f}",
        "eta_seconds": None if waiting else progress.eta_seconds,
        "eta_state": "waiting" if waiting else progress.eta_state,
        "eta_text": "" if waiting else eta_text(progress),
        "waiting": waiting.text if waiting else "",
        "can_cancel": run.status in (JuryRun.Status.QUEUED, JuryRun.Status.RUNNING),
        "can_resume": can_resume(run=run, progress=progress),
        "judges": [
            {
                "judge": h.judge,
                "total": h.total,
                "by_status": [f"{status} {n}" for status, n in h.by_status.items()],
                "failure_rate": f"{round(100 * h.failure_rate)}%",
                "mean_latency": "\u2013"
                if h.mean_latency_ms is None
                else f"{round(h.mean_latency_ms)} ms",
                "cost": f"${h.cost:.4f}",
            }
            for h in judge_health(run=run)
        ],
    }
