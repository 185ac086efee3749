"""Taxonomies and the Delphi studies that bring a clinician panel to consensus on them.

A taxonomy version is an ordered tree category > subcategory > task. A node's `identity`
stays the same across versions, so a Delphi item can be followed from draft to release and
rating items filed under an older version can be mapped to a newer one.
"""

from __future__ import annotations

import uuid

from django.conf import settings
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


class Round(models.Model):
    class Status(models.TextChoices):
        DRAFT = "draft", "Draft"
        OPEN = "open", "Open"
        CLOSED = "closed", "Closed"
        ANALYSED = "analysed", "Analysed"
        FEEDBACK_RELEASED = "feedback_released", "Feedback released"

    study = models.ForeignKey(DelphiStudy, on_delete=models.CASCADE, related_name="rounds")
    number = models.PositiveIntegerField()
    status = models.CharField(max_length=24, choices=Status.choices, default=Status.DRAFT)
    collects_suggestions = models.BooleanField(default=False)
    opened_at = models.DateTimeField(null=True, blank=True)
    closes_at = models.DateTimeField(null=True, blank=True)
    closed_at = models.DateTimeField(null=True, blank=True)
    feedback_released_at = models.DateTimeField(null=True, blank=True)
    # The stopping rule evaluated when the round was analysed: {stop, criteria_met, reasons}.
    stopping_decision = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["study", "number"]
        constraints = [
            models.UniqueConstraint(fields=["study", "number"], name="round_number_once"),
            models.CheckConstraint(condition=Q(number__gte=1), name="round_number_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.study} round {self.number}"


class RoundItem(models.Model):
    """One version of one taxonomy node, as put to the panel in one round."""

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="items")
    identity = models.UUIDField(help_text="The taxonomy node's identity across versions.")
    item_version = models.PositiveIntegerField(default=1)
    kind = models.CharField(max_length=16, choices=TaxonomyNode.Kind.choices)
    parent_identity = models.UUIDField(null=True, blank=True)
    position = models.PositiveIntegerField(default=0)
    name = models.CharField(max_length=300)
    description = models.TextField(blank=True)
    change_note = models.TextField(
        blank=True, help_text="What changed since the last round, and why."
    )

    class Meta:
        ordering = ["round", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["round", "identity"], name="round_item_once_per_round"),
            models.CheckConstraint(
                condition=Q(item_version__gte=1), name="round_item_version_positive"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.item_version}"


class PanelistRound(models.Model):
    class Status(models.TextChoices):
        INVITED = "invited", "Invited"
        STARTED = "started", "Started"
        SUBMITTED = "submitted", "Submitted"
        NON_RESPONDER = "non_responder", "Non-responder"
        WITHDRAWN = "withdrawn", "Withdrawn"

    panelist = models.ForeignKey(Panelist, on_delete=models.CASCADE, related_name="rounds")
    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="panelist_rounds")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.INVITED)
    comprehensiveness = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="Comprehensiveness of the whole taxonomy, 1-5."
    )
    started_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    last_reminded_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["panelist", "round"], name="panelist_round_once"),
            models.CheckConstraint(
                condition=Q(comprehensiveness__isnull=True)
                | Q(comprehensiveness__gte=1, comprehensiveness__lte=5),
                name="comprehensiveness_1_to_5",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.panelist} in round {self.round_id}: {self.status}"


class Response(models.Model):
    """A panelist's answer on one round item; a draft until the panelist submits the round."""

    panelist = models.ForeignKey(Panelist, on_delete=models.CASCADE, related_name="responses")
    round_item = models.ForeignKey(RoundItem, on_delete=models.CASCADE, related_name="responses")
    rating = models.PositiveSmallIntegerField(null=True, blank=True)
    unable_to_rate = models.BooleanField(default=False)
    placement_agrees = models.BooleanField(null=True, blank=True)
    placement_choice = models.UUIDField(
        null=True, blank=True, help_text="Identity of the category the panelist placed it under."
    )
    comment = models.TextField(blank=True)
    reason_outside_iqr = models.TextField(blank=True)
    is_draft = models.BooleanField(default=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["panelist", "round_item"], name="response_once"),
            models.CheckConstraint(
                condition=Q(rating__isnull=True) | Q(rating__gte=1, rating__lte=9),
                name="response_rating_1_to_9",
            ),
            models.CheckConstraint(
                condition=~Q(unable_to_rate=True, rating__isnull=False),
                name="response_unable_has_no_rating",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.panelist} on {self.round_item_id}: {self.rating}"


class Suggestion(models.Model):
    class Kind(models.TextChoices):
        ADD = "add", "Add"
        RENAME = "rename", "Rename"
        MOVE = "move", "Move"
        MERGE = "merge", "Merge"
        DELETE = "delete", "Delete"

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        ACCEPTED = "accepted", "Accepted"
        REJECTED = "rejected", "Rejected"

    round = models.ForeignKey(Round, on_delete=models.CASCADE, related_name="suggestions")
    panelist = models.ForeignKey(Panelist, on_delete=models.CASCADE, related_name="suggestions")
    kind = models.CharField(max_length=16, choices=Kind.choices)
    target_identity = models.UUIDField(null=True, blank=True)
    details = models.JSONField(
        default=dict, blank=True, help_text="New name, new parent, merge target."
    )
    text = models.TextField(blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    triage_reason = models.TextField(blank=True)
    triaged_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    triaged_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.CheckConstraint(
                condition=Q(status="pending") | ~Q(triage_reason=""),
                name="suggestion_triage_has_reason",
            )
        ]

    def __str__(self) -> str:
        return f"{self.kind} suggestion by {self.panelist} ({self.status})"


class RoundItemStatistics(models.Model):
    """The statistics of one round item, for the whole panel (group "") or one stakeholder group."""

    round_item = models.ForeignKey(RoundItem, on_delete=models.CASCADE, related_name="statistics")
    group = models.CharField(max_length=100, blank=True)
    n_invited = models.PositiveIntegerField()
    n_rated = models.PositiveIntegerField()
    n_unable = models.PositiveIntegerField()
    median = models.FloatField(null=True)
    q1 = models.FloatField(null=True)
    q3 = models.FloatField(null=True)
    iqr = models.FloatField(null=True)
    mean = models.FloatField(null=True)
    sd = models.FloatField(null=True)
    counts = models.JSONField(default=dict, help_text="Ratings per scale point.")
    pct_low = models.FloatField(null=True, help_text="% rating 1-3")
    pct_mid = models.FloatField(null=True, help_text="% rating 4-6")
    pct_high = models.FloatField(null=True, help_text="% rating 7-9")
    p30 = models.FloatField(null=True)
    p70 = models.FloatField(null=True)
    ipr = models.FloatField(null=True)
    ai = models.FloatField(null=True)
    ipras = models.FloatField(null=True)
    disagreement = models.BooleanField(null=True)
    outcome = models.CharField(max_length=24, blank=True)
    computed_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name_plural = "Round item statistics"
        constraints = [
            models.UniqueConstraint(
                fields=["round_item", "group"], name="round_item_statistics_once"
            )
        ]

    def __str__(self) -> str:
        return f"statistics of {self.round_item_id} ({self.group or 'all'})"


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
