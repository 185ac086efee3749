"""Attention checks: planted items with an obvious answer, marked by a coordinator.

Kept apart from annotation.models (imported at its end) so that module stays readable. A
check is never shown to a rater as such: nothing a rater reads joins this table.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class AttentionCheck(models.Model):
    """An item whose answer is obvious: a rater's submitted values must fall in the expected
    range of every criterion named in ``expected`` ({criterion key: [low, high]}, inclusive,
    on the criterion's scale). Its ratings stay out of the agreement statistics."""

    study = models.ForeignKey(
        "annotation.RatingStudy", on_delete=models.CASCADE, related_name="attention_checks"
    )
    item = models.OneToOneField(
        "annotation.Item", on_delete=models.CASCADE, related_name="attention_check"
    )
    expected = models.JSONField()
    note = models.TextField(
        blank=True, help_text="For coordinators only: why the answer is obvious."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "item"]

    def __str__(self) -> str:
        return f"attention check on item {self.item_id}"
