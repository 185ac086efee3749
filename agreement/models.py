"""Stored report snapshots: reopening a report shows the numbers it was computed with."""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models import RatingStudy


class ReportSnapshot(models.Model):
    study = models.ForeignKey(
        RatingStudy, on_delete=models.CASCADE, related_name="report_snapshots"
    )
    title = models.CharField(max_length=300, blank=True)
    parameters = models.JSONField(
        default=dict, help_text="What was asked: forms, filters, resamples, seed."
    )
    results = models.JSONField(default=dict)
    method = models.JSONField(
        default=dict, help_text="Forms, n items, n raters, CI method, seed, package versions."
    )
    input_hash = models.CharField(
        max_length=64, help_text="Hash of the score table it was computed from."
    )
    previous = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="recomputations"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return self.title or f"Report {self.pk}"


class ReportJob(models.Model):
    """One request to compute a report, run by a Celery worker: its progress while it runs,
    the snapshot it made, or why it failed. The snapshot itself never changes; the job is the
    history of computing it."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        FINISHED = "finished", "Finished"
        FAILED = "failed", "Failed"

    study = models.ForeignKey(RatingStudy, on_delete=models.CASCADE, related_name="report_jobs")
    title = models.CharField(max_length=300)
    parameters = models.JSONField(
        default=dict,
        help_text="Normalised when asked (the seed drawn then), so a retry of "
        "the task computes the same report.",
    )
    previous = models.ForeignKey(
        ReportSnapshot,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Set for a recomputation: the snapshot it is compared with.",
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    stage = models.CharField(max_length=200, blank=True)
    cells_done = models.PositiveIntegerField(default=0)
    cells_total = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    snapshot = models.OneToOneField(
        ReportSnapshot, null=True, blank=True, on_delete=models.SET_NULL, related_name="job"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="Last progress written by the worker computing it."
    )
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.title} ({self.status})"

    @property
    def resamples_total(self) -> int:
        return self.cells_total * int(self.parameters.get("n_resamples") or 0)

    @property
    def resamples_done(self) -> int:
        return self.cells_done * int(self.parameters.get("n_resamples") or 0)


class ReportRendering(models.Model):
    """A snapshot's file (CSV, JSON, PDF, the page's figures, ...) produced once and stored:
    opening a report or downloading a file never recomputes it."""

    snapshot = models.ForeignKey(
        ReportSnapshot, on_delete=models.CASCADE, related_name="renderings"
    )
    kind = models.CharField(max_length=32)
    content_type = models.CharField(max_length=100)
    content = models.BinaryField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["snapshot", "kind"], name="one_rendering_per_kind")
        ]

    def __str__(self) -> str:
        return f"{self.snapshot_id}:{self.kind}"


class PlanningSimulation(models.Model):
    """A design simulation queued for a worker (agreement.services.planning): the study and
    the user it belongs to, so that its task id is read back only within that study, and the
    one slot each user has for a simulation, held until it ends, fails or is cancelled (the
    open row: no ``ended_at``). Its result stays in Celery's result backend."""

    class Outcome(models.TextChoices):
        FINISHED = "finished", "Finished"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"
        LOST = "lost", "Lost"

    task_id = models.CharField(max_length=64, unique=True)
    study = models.ForeignKey(
        RatingStudy, on_delete=models.CASCADE, related_name="planning_simulations"
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+"
    )
    spec = models.JSONField(default=dict)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    outcome = models.CharField(max_length=16, choices=Outcome.choices, blank=True)
    reason = models.TextField(blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["requested_by"],
                condition=models.Q(ended_at__isnull=True),
                name="one_open_simulation_per_user",
            )
        ]

    def __str__(self) -> str:
        return f"simulation {self.task_id} ({self.outcome or 'open'})"
