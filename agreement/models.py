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
