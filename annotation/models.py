"""Rating studies: rubric, items, who takes part in which role, assignments and ratings."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from delphi.models import TaxonomyNode, TaxonomyVersion


class RubricTemplate(models.Model):
    """A reusable rubric; a study copies its criteria when it is set up.

    `criteria` is a list of {key, label, definition, scale_min, scale_max, anchors,
    allow_cannot_assess}, the same fields as RubricCriterion.
    """

    name = models.CharField(max_length=200, unique=True)
    description = models.TextField(blank=True)
    criteria = models.JSONField(default=list)

    def __str__(self) -> str:
        return self.name


class RatingStudy(models.Model):
    name = models.CharField(max_length=300)
    instructions = models.TextField(blank=True, help_text="Shown to raters above every item.")
    taxonomy_version = models.ForeignKey(
        TaxonomyVersion,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="rating_studies",
    )
    ratings_per_item = models.PositiveSmallIntegerField(
        default=2, help_text="k: how many clinicians rate each item."
    )
    show_reference = models.BooleanField(default=True)
    comment_required_at_or_below = models.PositiveSmallIntegerField(
        null=True, blank=True, help_text="A score at or below this needs a comment; empty: never."
    )
    exclusion_metadata_key = models.CharField(
        max_length=100,
        blank=True,
        help_text="Item metadata field naming users who must not rate that item (e.g. its author).",
    )
    assignment_seed = models.BigIntegerField(null=True, blank=True)
    locked_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        verbose_name_plural = "Rating studies"
        ordering = ["-created_at", "id"]
        constraints = [
            models.CheckConstraint(condition=Q(ratings_per_item__gte=1), name="study_k_positive"),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def is_locked(self) -> bool:
        return self.locked_at is not None


class RubricCriterion(models.Model):
    study = models.ForeignKey(RatingStudy, on_delete=models.CASCADE, related_name="criteria")
    key = models.SlugField(max_length=50)
    label = models.CharField(max_length=100)
    definition = models.TextField(blank=True)
    scale_min = models.SmallIntegerField(default=1)
    scale_max = models.SmallIntegerField(default=5)
    anchors = models.JSONField(default=dict, blank=True, help_text='{"1": "Very poor", ...}')
    allow_cannot_assess = models.BooleanField(default=False)
    allows_decimals = models.BooleanField(
        default=False,
        help_text="Values between the scale points (e.g. 3.5) may be imported; the rating "
        "page still offers whole points only.",
    )
    position = models.PositiveSmallIntegerField(default=0)

    class Meta:
        ordering = ["study", "position", "id"]
        constraints = [
            models.UniqueConstraint(fields=["study", "key"], name="criterion_key_once_per_study"),
            models.CheckConstraint(
                condition=Q(scale_min__lt=F("scale_max")), name="criterion_scale_ordered"
            ),
            models.CheckConstraint(
                condition=Q(scale_min__gte=0, scale_max__lte=100), name="criterion_scale_0_to_100"
            ),
        ]

    def __str__(self) -> str:
        return self.label


class Item(models.Model):
    """One model output to be rated, with the input and reference it answers."""

    study = models.ForeignKey(RatingStudy, on_delete=models.CASCADE, related_name="items")
    external_id = models.CharField(max_length=200)
    taxonomy_node = models.ForeignKey(
        TaxonomyNode, null=True, blank=True, on_delete=models.PROTECT, related_name="items"
    )
    benchmark = models.CharField(max_length=200, blank=True)
    input_text = models.TextField()
    reference_text = models.TextField(blank=True)
    output_text = models.TextField()
    # Hidden from clinicians: never rendered on a rater's page or API response.
    model_name = models.CharField(max_length=200)
    metadata = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    # The one metadata key a rater sees (collapsed, on the rating page and in the rater API):
    # what the model was shown before the input, e.g. a HELM prompt's instructions and
    # in-context examples. The rest of metadata may name the model and stays hidden.
    PROMPT_CONTEXT_KEY = "prompt_context"

    class Meta:
        ordering = ["study", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "external_id", "model_name"], name="item_once_per_study_and_model"
            )
        ]

    def __str__(self) -> str:
        return f"{self.external_id} [{self.pk}]"


class StudyMembership(models.Model):
    class Role(models.TextChoices):
        COORDINATOR = "coordinator", "Coordinator"
        CLINICIAN = "clinician", "Clinician"
        RESEARCHER = "researcher", "Researcher"

    study = models.ForeignKey(RatingStudy, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="study_memberships"
    )
    role = models.CharField(max_length=16, choices=Role.choices)
    pseudonym = models.CharField(
        max_length=32, blank=True, help_text='Stable within the study, e.g. "R03"; used in exports.'
    )
    is_active = models.BooleanField(default=True)
    # A rater whose ratings came from a file (annotation.services.rating_imports): an
    # inactive membership of a user who cannot log in, never given assignments.
    is_imported = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "role", "pseudonym", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["study", "user", "role"], name="membership_once_per_role"
            ),
            models.UniqueConstraint(
                fields=["study", "pseudonym"],
                condition=~Q(pseudonym=""),
                name="pseudonym_once_per_study",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.user} as {self.role} in {self.study}"


def new_assignment_handle() -> str:
    """A fresh opaque address for one assignment: 128 random bits, URL-safe (22 characters).

    Raters see an assignment only by its handle: unlike the row id it says nothing about
    when, or from which import, the item came (ids follow import order, and an import
    usually holds one model).
    """
    return secrets.token_urlsafe(16)


class Assignment(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Not started"
        IN_PROGRESS = "in_progress", "Draft saved"
        SUBMITTED = "submitted", "Submitted"
        WITHDRAWN = "withdrawn", "Withdrawn"

    study = models.ForeignKey(RatingStudy, on_delete=models.CASCADE, related_name="assignments")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assignments")
    handle = models.CharField(
        max_length=32,
        unique=True,
        default=new_assignment_handle,
        editable=False,
        help_text="The rater's only name for this assignment (URLs, API): random, unordered.",
    )
    clinician = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="assignments"
    )
    position = models.PositiveIntegerField(help_text="Place in this clinician's own order.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    flagged = models.BooleanField(default=False)
    flag_reason = models.TextField(blank=True)
    # A coordinator's answer to the flag (services.flags.resolve_flag); cleared when the
    # rater flags again or withdraws the flag. The history of both is in AuditEvent.
    flag_resolved_at = models.DateTimeField(null=True, blank=True)
    flag_resolved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
    )
    flag_resolution = models.TextField(blank=True)
    time_spent_seconds = models.FloatField(default=0)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    first_submitted_at = models.DateTimeField(null=True, blank=True)
    submitted_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["study", "clinician", "position"]
        constraints = [
            models.UniqueConstraint(
                fields=["item", "clinician"], name="assignment_once_per_item_and_clinician"
            ),
            models.UniqueConstraint(
                fields=["study", "clinician", "position"],
                name="assignment_position_once_per_clinician",
            ),
            models.CheckConstraint(
                condition=Q(time_spent_seconds__gte=0), name="assignment_time_nonnegative"
            ),
        ]
        indexes = [models.Index(fields=["study", "status"])]

    def __str__(self) -> str:
        return f"item {self.item_id} for user {self.clinician_id} (#{self.position})"


class Rating(models.Model):
    """The clinician's score on one criterion of one assignment.

    The first submitted value is kept beside the latest one, so exports can give either; every
    change also writes an AuditEvent.
    """

    assignment = models.ForeignKey(Assignment, on_delete=models.CASCADE, related_name="ratings")
    criterion = models.ForeignKey(RubricCriterion, on_delete=models.PROTECT, related_name="ratings")
    value = models.SmallIntegerField(null=True, blank=True)
    cannot_assess = models.BooleanField(default=False)
    comment = models.TextField(blank=True)
    first_value = models.SmallIntegerField(null=True, blank=True)
    first_cannot_assess = models.BooleanField(null=True, blank=True)
    first_submitted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["assignment", "criterion__position"]
        constraints = [
            models.UniqueConstraint(
                fields=["assignment", "criterion"], name="rating_once_per_assignment_and_criterion"
            ),
            models.CheckConstraint(
                condition=Q(value__isnull=True) | Q(value__gte=0, value__lte=100),
                name="rating_value_0_to_100",
            ),
            models.CheckConstraint(
                condition=~Q(cannot_assess=True, value__isnull=False),
                name="rating_cannot_assess_has_no_value",
            ),
        ]

    def __str__(self) -> str:
        return f"rating {self.criterion_id}={self.value} on assignment {self.assignment_id}"


class ImportedRating(models.Model):
    """A rating collected elsewhere (another tool, a spreadsheet, an earlier study) and
    imported from a long file: no assignment stands behind it, the rater is an imported
    study member. The score table reads it as it reads a submitted Rating."""

    study = models.ForeignKey(
        RatingStudy, on_delete=models.CASCADE, related_name="imported_ratings"
    )
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="imported_ratings")
    rater = models.ForeignKey(
        StudyMembership, on_delete=models.PROTECT, related_name="imported_ratings"
    )
    criterion = models.ForeignKey(
        RubricCriterion, on_delete=models.PROTECT, related_name="imported_ratings"
    )
    # A float: a criterion may allow decimals (RubricCriterion.allows_decimals).
    value = models.FloatField()
    comment = models.TextField(blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["study", "item", "criterion__position", "rater"]
        constraints = [
            models.UniqueConstraint(
                fields=["item", "rater", "criterion"], name="imported_rating_once"
            ),
            models.CheckConstraint(
                condition=Q(value__gte=0, value__lte=100), name="imported_rating_value_0_to_100"
            ),
        ]

    def __str__(self) -> str:
        return f"imported {self.criterion_id}={self.value} on item {self.item_id}"


class ImportJob(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        SUCCEEDED = "succeeded", "Succeeded"
        FAILED = "failed", "Failed"

    class Completions(models.TextChoices):
        FIRST = "first", "The first completion only (the others counted as dropped)"
        EACH = "each", "Each completion as an item of its own"

    class OnBadRun(models.TextChoices):
        REFUSE = "refuse", "Refuse the whole suite"
        SKIP = "skip", "Skip the bad run, import the others"

    class Kind(models.TextChoices):
        ITEMS = "items", "Items"
        RATINGS = "ratings", "Ratings (long file)"
        SCORES = "scores", "Machine scores (long file)"

    study = models.ForeignKey(RatingStudy, on_delete=models.CASCADE, related_name="import_jobs")
    # What the upload holds: items (imports.jobs), or a long file of ratings or machine scores
    # (imports.long_jobs); one job and one state machine for every kind.
    kind = models.CharField(max_length=8, choices=Kind.choices, default=Kind.ITEMS)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+"
    )
    file_format = models.CharField(max_length=16)
    # How the format was settled: chosen by the coordinator, or detected and from what
    # (imports.formats.detect_format), shown on the import page.
    format_note = models.CharField(max_length=300, blank=True)
    source_name = models.CharField(max_length=300, blank=True)
    source_path = models.CharField(max_length=500, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    total_rows = models.PositiveIntegerField(default=0)
    processed_rows = models.PositiveIntegerField(default=0)
    created_items = models.PositiveIntegerField(default=0)
    unchanged_items = models.PositiveIntegerField(default=0)
    errors = models.JSONField(default=list, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # A HELM suite (many runs in one upload, imports.suite): what to do with a bad run, how
    # many runs there are, how many were checked and finished, and one summary per run.
    on_bad_run = models.CharField(max_length=8, choices=OnBadRun.choices, default=OnBadRun.REFUSE)
    # HELM requests with several completions (num_outputs > 1): what becomes an item.
    helm_completions = models.CharField(
        max_length=8, choices=Completions.choices, default=Completions.FIRST
    )
    runs_total = models.PositiveIntegerField(default=0)
    runs_checked = models.PositiveIntegerField(default=0)
    runs_done = models.PositiveIntegerField(default=0)
    run_summaries = models.JSONField(default=list, blank=True)
    # A succeeded long-file import: what it did (services.LongImportSummary.as_dict).
    summary = models.JSONField(default=dict, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"import {self.pk} ({self.file_format}, {self.status})"


class AuditEvent(models.Model):
    """An explicit record of a user-facing change: who, when, what, before and after."""

    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    at = models.DateTimeField(auto_now_add=True)
    study = models.ForeignKey(
        RatingStudy, null=True, blank=True, on_delete=models.CASCADE, related_name="audit_events"
    )
    action = models.CharField(max_length=64)
    target_type = models.CharField(max_length=64)
    target_id = models.CharField(max_length=64)
    before = models.JSONField(null=True, blank=True)
    after = models.JSONField(null=True, blank=True)

    class Meta:
        ordering = ["at", "id"]
        indexes = [models.Index(fields=["target_type", "target_id"])]

    def __str__(self) -> str:
        return f"{self.at:%Y-%m-%d %H:%M} {self.action} {self.target_type}:{self.target_id}"


def items_to_rate(study: RatingStudy) -> models.QuerySet[Item]:
    """The items clinicians are dealt: the latest draw's, or every item without a draw; never
    a calibration item (dealt to every rater apart, services.calibration). (Here,
    beside the model, so that assignment and the selectors share the one rule.)"""
    items = Item.objects.filter(study=study, calibration_item__isnull=True)
    draw = SampleDraw.objects.filter(study=study).first()
    return items.filter(sample_draws=draw) if draw is not None else items


# Kept in modules of their own (annotation.models would pass ~400 lines); imported here so
# Django and `from annotation.models import ...` find them.
from annotation.calibration_models import CalibrationCompletion, CalibrationItem  # noqa: E402, F401
from annotation.checks_models import AttentionCheck  # noqa: E402, F401
from annotation.sample_models import SampleDraw  # noqa: E402
from annotation.watch_models import AgreementWatch  # noqa: E402, F401
