"""How long to wait before trying a judge call again, and when to give up."""

from __future__ import annotations

import random

from django.conf import settings

DEFAULT_MAX_ATTEMPTS = 5
BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 30.0
# Give up waiting for a free slot after this long (settings.JURY_MAX_WAIT_FOR_SLOT_SECONDS);
# the call stays pending, and the sweep (jury.execution.sweep) sends it again.
MAX_WAIT_FOR_SLOT_SECONDS = 600.0


def max_wait_for_slot_seconds() -> float:
    """How long a call waits for a slot of its judge's limits before it gives up its turn."""
    return float(getattr(settings, "JURY_MAX_WAIT_FOR_SLOT_SECONDS", MAX_WAIT_FOR_SLOT_SECONDS))


def backoff_seconds(attempt: int, retry_after: float | None, rng: random.Random) -> float:
    """Exponential backoff with full jitter; a provider's Retry-After is a floor."""
    ceiling = min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * (2 ** (attempt - 1)))
    delay = rng.uniform(0, ceiling)
    return max(delay, retry_after) if retry_after is not None else delay


def retry_delay(
    *,
    spent_attempts: int,
    max_attempts: int,
    retry_after: float | None,
    elapsed_seconds: float,
    budget_seconds: float,
    rng: random.Random,
) -> float | None:
    """The backoff before trying a failed call again, or None when it ends now: its attempts
    are spent (failures while its provider was down do not count, jury.breakers), or the next
    try would start after its retry budget (seconds since the call began)."""
    if spent_attempts >= max_attempts:
        return None
    delay = backoff_seconds(max(spent_attempts, 1), retry_after, rng)
    if elapsed_seconds + delay > budget_seconds:
        return None
    return delay
