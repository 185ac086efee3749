"""The sample draw: a seeded stratified draw of the items clinicians rate, recorded with the
study (annotation.sampling draws, annotation.services.sampling records).

Kept apart from annotation.models (imported at its end), like the calibration items. The
rule of which items a draw deals is annotation.models.items_to_rate.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models


class SampleDraw(models.Model):
    """A seeded stratified draw of the items clinicians rate (annotation.sampling). The
    study's latest draw is the one in force: assignment deals only its items; the items it
    leaves out stay in the study for the jury and the metrics."""

    class Rule(models.TextChoices):
        PROPORTIONAL = "proportional", "Proportional to a total (largest remainder)"
        QUOTAS = "quotas", "Quotas per stratum"

    study = models.ForeignKey(
        "annotation.RatingStudy", on_delete=models.CASCADE, related_name="sample_draws"
    )
    seed = models.BigIntegerField()
    rule = models.CharField(max_length=16, choices=Rule.choices)
    total = models.PositiveIntegerField(null=True, blank=True)
    quotas = models.JSONField(default=dict, blank=True)
    strata_keys = models.JSONField(default=list)
    paired = models.BooleanField(default=True)
    case_key = models.CharField(max_length=16, default="external_id")
    # one entry per stratum: label, population, drawn, population_items, drawn_items
    strata = models.JSONField(default=list)
    # models, counts, and the drawn cases that lack a model (pairing not possible there)
    summary = models.JSONField(default=dict)
    items = models.ManyToManyField("annotation.Item", related_name="sample_draws")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"draw {self.pk} of study {self.study_id} (seed {self.seed})"
