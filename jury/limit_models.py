"""The shared state of the jury's rate limits and circuit breakers when they live in the
database (jury.limits.database, jury.breakers): each judge's token bucket, the leases of calls
in flight, the per-server concurrency limits and each endpoint's breaker.

Kept apart from jury.models (imported at its end, so Django and `from jury.models import ...`
find them); models are named by string, so this module imports nothing of jury.
"""

from __future__ import annotations

from django.db import models
from django.db.models import Q


class JudgeLimiter(models.Model):
    """Shared state for one judge's requests-per-minute budget (a token bucket), locked by
    every worker that wants to call the judge, so the limit holds across all processes."""

    judge = models.OneToOneField("jury.Judge", on_delete=models.CASCADE, related_name="limiter")
    tokens = models.FloatField(default=0)
    refilled_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"limiter of {self.judge_id}"


class JudgeLease(models.Model):
    """A call in flight. Active leases per judge are capped at the judge's max concurrency;
    one per call means two workers never run the same call. Leases expire, so a killed
    worker's slot comes back."""

    judge = models.ForeignKey("jury.Judge", on_delete=models.CASCADE, related_name="leases")
    call = models.OneToOneField("jury.JudgeCall", on_delete=models.CASCADE, related_name="lease")
    expires_at = models.DateTimeField(db_index=True)
    # The judge's server (EndpointLimit.origin) when it has a limit of its own, else "".
    origin = models.CharField(max_length=300, blank=True, db_index=True)

    def __str__(self) -> str:
        return f"lease of call {self.call_id} until {self.expires_at:%H:%M:%S}"


class EndpointLimit(models.Model):
    """Requests in flight allowed on one server, shared by every judge whose endpoint is on
    it (on top of each judge's own max_concurrency): two judges on a server sized for two
    requests must not send four."""

    origin = models.CharField(
        max_length=300,
        unique=True,
        help_text="The server as scheme://host:port (a judge endpoint URL is cut to this).",
    )
    max_concurrency = models.PositiveIntegerField(default=2)

    class Meta:
        ordering = ["origin"]
        constraints = [
            models.CheckConstraint(
                condition=Q(max_concurrency__gte=1), name="endpoint_concurrency_positive"
            )
        ]

    def __str__(self) -> str:
        return f"{self.origin} ({self.max_concurrency} at once)"


class EndpointBreaker(models.Model):
    """The circuit breaker of one provider endpoint (jury.breakers) when the limits live in the
    database: its state as JSON, and a version that every change compares and bumps."""

    endpoint = models.CharField(max_length=300, unique=True)
    state = models.JSONField(default=dict)
    version = models.PositiveBigIntegerField(default=0)
    updated_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"breaker of {self.endpoint}"
