"""Taxonomy versions: ordered trees category > subcategory > task. A node's `identity` stays
the same across versions, so an item can be followed from draft to release."""

from __future__ import annotations

import uuid

from django.db import models
from django.db.models import Q


class TaxonomyVersion(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        RELEASED = "released", "Released"

    class Source(models.TextChoices):
        FIXTURE = "fixture", "Shipped fixture"
        IMPORT = "import", "Imported file"
        DELPHI = "delphi", "Delphi consensus"
        MANUAL = "manual", "Edited by hand"

    name = models.CharField(max_length=200, unique=True, help_text='For example "MedHELM 2025".')
    description = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.DRAFT)
    source = models.CharField(max_length=16, choices=Source.choices, default=Source.MANUAL)
    derived_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="derived_versions"
    )
    released_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class TaxonomyNode(models.Model):
    class Kind(models.TextChoices):
        CATEGORY = "category", "Category"
        SUBCATEGORY = "subcategory", "Subcategory"
        TASK = "task", "Task"

    version = models.ForeignKey(TaxonomyVersion, on_delete=models.CASCADE, related_name="nodes")
    identity = models.UUIDField(
        default=uuid.uuid4, help_text="Shared by the same node in every version of a taxonomy."
    )
    kind = models.CharField(max_length=16, choices=Kind.choices)
    parent = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.CASCADE, related_name="children"
    )
    position = models.PositiveIntegerField(default=0)
    name = models.CharField(max_length=300)
    description = models.TextField(blank=True)
    # For a version released by a Delphi study: the node's path through the rounds, one entry
    # per round it was put to the panel (version, wording, change note, outcome, median...).
    history = models.JSONField(default=list, blank=True)

    class Meta:
        ordering = ["version", "position", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["version", "identity"], name="node_identity_once_per_version"
            ),
            models.CheckConstraint(
                condition=(
                    Q(kind="category", parent__isnull=True)
                    | Q(~Q(kind="category"), parent__isnull=False)
                ),
                name="node_only_categories_are_roots",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} ({self.kind})"
