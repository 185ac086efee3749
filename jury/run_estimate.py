"""How long a run still needs, as a pure rule (no Django): from the pace of the calls that
finished recently, never from the time elapsed since the start.

An estimate from elapsed time grows while nothing finishes (a stalled worker, a provider
outage): the run page then promised more time every few seconds. Here the rate is measured
between finishes only, the estimate made at the last finish counts down from there, and when
nothing has finished for a while, or too few calls finished to measure a pace, there is no
number: the page says "estimating…".
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

# The pace is read from the calls that finished within this window before the last finish...
WINDOW_SECONDS = 300.0
# ...and at most this many of them (the most recent).
MAX_SAMPLES = 200
# Fewer finishes than this in the window measure no pace.
MIN_SAMPLES = 3
# With no finish for this many mean intervals (and at least STALL_MIN_SECONDS), the pace is
# no longer known.
STALL_INTERVALS = 5.0
STALL_MIN_SECONDS = 30.0


@dataclass(frozen=True)
class Estimate:
    """`seconds` left, or None with `state` "estimating" (no recent pace) or "none" (nothing
    left to do)."""

    seconds: float | None
    state: str  # "known", "estimating" or "none"
    rate_per_minute: float | None = None


def estimate_remaining(*, finished_at: Sequence[datetime], pending: int, now: datetime) -> Estimate:
    """Seconds until `pending` calls are done at the pace of the recent finishes
    (`finished_at`, any order, of calls that really ran: cache hits finish at once and say
    nothing of the pace)."""
    if pending <= 0:
        return Estimate(None, "none")
    times = sorted(finished_at)[-MAX_SAMPLES:]
    if not times:
        return Estimate(None, "estimating")
    last = times[-1]
    recent = [t for t in times if (last - t).total_seconds() <= WINDOW_SECONDS]
    span = (last - recent[0]).total_seconds()
    if len(recent) < MIN_SAMPLES or span <= 0:
        return Estimate(None, "estimating")
    interval = span / (len(recent) - 1)  # mean seconds between finishes
    since_last = max(0.0, (now - last).total_seconds())
    if since_last > max(STALL_MIN_SECONDS, STALL_INTERVALS * interval):
        return Estimate(None, "estimating")
    at_last = pending * interval
    left = at_last - since_last
    if left <= 0:
        # The pace promised the end already: say so rather than a number that grows again.
        return Estimate(None, "estimating", rate_per_minute=60.0 / interval)
    return Estimate(left, "known", rate_per_minute=60.0 / interval)
