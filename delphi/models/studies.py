"""A Delphi study, its coordinators, its panel and its audit trail."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from delphi.models.taxonomy import TaxonomyVersion


class DelphiStudy(models.Model):
    class Status(models.TextChoices):
        SETUP = "setup", "Setting up"
        LOCKED = "locked", "Protocol locked"
        RUNNING = "running", "Rounds running"
        FINISHED = "finished", "Finished"
        RELEASED = "released", "Taxonomy released"

    class CarryOver(models.TextChoices):
        DROP_RESOLVED = "drop_resolved", "Drop items that reached consensus"
        RERATE_ALL = "rerate_all", "Re-rate every item"

    title = models.CharField(max_length=300)
    aims = models.TextField(blank=True)
    draft_taxonomy = models.ForeignKey(
        TaxonomyVersion, on_delete=models.PROTECT, related_name="delphi_studies_drafting"
    )
    released_taxonomy = models.OneToOneField(
        TaxonomyVersion,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="released_by_delphi_study",
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.SETUP)
    # What is asked per node, the consensus rule, carry-over and stopping rule: frozen with
    # the protocol. Their shapes are validated by the delphi services.
    questions = models.JSONField(default=dict, blank=True)
    consensus_rule = models.JSONField(default=dict, blank=True)
    carry_over = models.CharField(
        max_length=16, choices=CarryOver.choices, default=CarryOver.DROP_RESOLVED
    )
    stopping_rule = models.JSONField(default=dict, blank=True)
    ask_reason_outside_iqr = models.BooleanField(default=False)
    protocol_locked_at = models.DateTimeField(null=True, blank=True)
    protocol_hash = models.CharField(max_length=64, blank=True)
    # The exact document that was hashed (delphi.protocol.build_protocol_document).
    protocol_document = models.JSONField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    finished_reason = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "Delphi studies"
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.title


class DelphiCoordinator(models.Model):
    study = models.ForeignKey(DelphiStudy, on_delete=models.CASCADE, related_name="coordinators")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="delphi_coordinations"
    )
    added_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["study", "user"], name="delphi_coordinator_once")
        ]

    def __str__(self) -> str:
        return f"{self.user} coordinates {self.study}"


class Panelist(models.Model):
    study = models.ForeignKey(DelphiStudy, on_delete=models.CASCADE, related_name="panelists")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="delphi_panels",
    )
    pseudonym = models.CharField(max_length=32, help_text='Shown instead of the name, e.g. "P07".')
    email = models.EmailField()
    stakeholder_group = models.CharField(max_length=100, blank=True)
    specialty = models.CharField(max_length=100, blank=True)
    # Only a hash of the one-time invitation token is stored.
    invite_token_hash = models.CharField(max_length=64, blank=True)
    invited_at = models.DateTimeField(null=True, blank=True)
    joined_at = models.DateTimeField(null=True, blank=True)
    withdrawn_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["study", "pseudonym"]
        constraints = [
            models.UniqueConstraint(fields=["study", "pseudonym"], name="panelist_pseudonym_once"),
            models.UniqueConstraint(fields=["study", "email"], name="panelist_email_once"),
            models.UniqueConstraint(
                fields=["study", "user"], condition=Q(user__isnull=False), name="panelist_user_once"
            ),
        ]

    def __str__(self) -> str:
        return self.pseudonym


class DelphiAuditEvent(models.Model):
    """Who changed what in a Delphi study, with the state before and after."""

    study = models.ForeignKey(DelphiStudy, on_delete=models.CASCADE, related_name="audit_events")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    at = models.DateTimeField(auto_now_add=True)
    action = models.CharField(max_length=64)
    target = models.CharField(max_length=200, blank=True)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)
    reason = models.TextField(blank=True)

    class Meta:
        ordering = ["at", "id"]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.action} {self.target}"
