"""Rounds of a Delphi study: the items put to the panel, answers, suggestions, statistics."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from delphi.models.studies import DelphiStudy, Panelist
from delphi.models.taxonomy import TaxonomyNode


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
