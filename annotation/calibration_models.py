"""Calibration items: items with a reference rating agreed by senior clinicians, which every
new rater rates first and then compares with the reference before their queue opens.

Kept apart from annotation.models (imported at its end), like the attention checks. A
calibration item is marked, not copied: it leaves the pool the balanced design deals
(models.items_to_rate), is dealt to every active clinician instead, and stays out of every
agreement statistic. Its reference is never shown to a rater before they have rated all
their calibration items.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class CalibrationItem(models.Model):
    """An item with a reference value per referenced criterion ({criterion key: value}, a
    whole point on that criterion's scale). ``set_by``/``set_at``: who last set the
    reference and when (the history is in AuditEvent)."""

    study = models.ForeignKey(
        "annotation.RatingStudy", on_delete=models.CASCADE, related_name="calibration_items"
    )
    item = models.OneToOneField(
        "annotation.Item", on_delete=models.CASCADE, related_name="calibration_item"
    )
    reference = models.JSONField()
    note = models.TextField(
        blank=True, help_text="For coordinators only: who agreed the reference, and why."
    )
    set_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    set_at = models.DateTimeField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "item"]

    def __str__(self) -> str:
        return f"calibration item {self.item_id}"


class CalibrationCompletion(models.Model):
    """A rater finished calibration: when, and the agreement with the reference they were
    shown then (``summary``: annotation.calibration_stats.CalibrationAgreement as a dict,
    per criterion and overall). Reports recompute from the ratings' first values; this row
    keeps what the rater saw when their queue opened."""

    study = models.ForeignKey(
        "annotation.RatingStudy", on_delete=models.CASCADE, related_name="calibration_completions"
    )
    clinician = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    completed_at = models.DateTimeField()
    n_items = models.PositiveIntegerField()
    summary = models.JSONField(default=dict)

    class Meta:
        ordering = ["study", "completed_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "clinician"], name="calibration_completed_once_per_rater"
            )
        ]

    def __str__(self) -> str:
        return f"calibration of user {self.clinician_id} in study {self.study_id}"
