"""The agreement watch: the last snapshot of agreement while clinicians rate.

Kept apart from annotation.models (imported at its end), like the calibration items.
"""

from __future__ import annotations

from django.db import models


class AgreementWatch(models.Model):
    """The last snapshot of agreement while clinicians rate (computed by agreement's
    refresh task, never on a request) and whether a refresh is queued.

    ``requested_at`` is set when a refresh is sent (ratings arrived) and cleared when a
    worker starts it, so ratings arriving meanwhile send at most one more (the debounce).
    """

    study = models.OneToOneField(
        "annotation.RatingStudy", on_delete=models.CASCADE, related_name="watch"
    )
    summary = models.JSONField(null=True, blank=True)
    computed_at = models.DateTimeField(null=True, blank=True)
    submissions_seen = models.PositiveIntegerField(default=0)
    requested_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    error_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return f"agreement watch of study {self.study_id}"
