"""Automatic metrics as machine raters: each item's metric scores, and the jobs that compute a
study's metrics in a worker.

Kept apart from jury.models (imported at its end, so Django and `from jury.models import ...`
find them).
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from annotation.models import Item, RatingStudy


class MetricScore(models.Model):
    """An automatic metric of one item's output against its reference: one the site computes
    (ROUGE-L, BERTScore) or any other imported under its own name (jury.score_imports)."""

    class Metric(models.TextChoices):
        """The metrics the site computes itself; imported ones may have any name."""

        ROUGE_L_F1 = "rouge_l_f1", "ROUGE-L F1"
        BERTSCORE_F1 = "bertscore_f1", "BERTScore F1"

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="metric_scores")
    metric = models.CharField(max_length=100)
    value = models.FloatField()
    scorer_model = models.CharField(
        max_length=300, blank=True, help_text="e.g. the BERTScore model path"
    )
    scorer_layer = models.SmallIntegerField(null=True, blank=True)
    params = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["item", "metric", "scorer_model"], name="metric_score_once_per_scorer"
            )
        ]

    def __str__(self) -> str:
        return f"{self.metric}={self.value:.4f} on item {self.item_id}"


class MetricJob(models.Model):
    """One request to compute a study's automatic metrics in a worker (from the report page,
    the demo or the API): queued, running, done with its counts, or failed with the reason,
    so the pages say where each metric stands instead of a silent "0 metrics"."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    study = models.ForeignKey(RatingStudy, on_delete=models.CASCADE, related_name="metric_jobs")
    metrics = models.JSONField(default=list)
    params = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True)
    counts = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        indexes = [models.Index(fields=["study", "-created_at"])]

    def __str__(self) -> str:
        return f"metrics {','.join(self.metrics)} of study {self.study_id}: {self.status}"
