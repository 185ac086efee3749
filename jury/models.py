"""Judge models, prompt templates, jury runs, every judge call and its attempts, and judge
scores. The automatic metrics' scores and jobs (jury.metric_models) and the rate limits' and
breakers' shared state (jury.limit_models) are in modules of their own, imported at the end.

API keys are never stored: a judge names the environment variable that holds its key. Which
variables and endpoint hosts a judge may use is the operator's (jury.providers.policy).
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.db.models import Q

from annotation.models import Item, RatingStudy, RubricCriterion
from jury.providers import structured
from jury.providers.policy import endpoint_problem, key_variable_problem
from jury.timing import (
    DEFAULT_RETRY_BUDGET_SECONDS,
    TIMEOUT_RULE,
    max_tokens_of,
    timeout_for_max_tokens,
)


class Judge(models.Model):
    class Provider(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible chat completions"
        ANTHROPIC = "anthropic", "Anthropic Messages API"
        LOCAL = "local", "Local model, in-process"
        IMPORTED = "imported", "Imported verdicts (e.g. a HELM run)"

    name = models.CharField(max_length=100, unique=True)
    description = models.TextField(
        blank=True,
        help_text="What readers of this judge's scores should know; shown beside them.",
    )
    provider = models.CharField(max_length=16, choices=Provider.choices)
    model_id = models.CharField(max_length=200)
    endpoint = models.URLField(blank=True, help_text="Base URL; empty for the provider's default.")
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        help_text="Name of the environment variable holding the API key.",
    )
    params = models.JSONField(
        default=dict,
        blank=True,
        help_text='Sampling parameters, e.g. {"temperature": 0, "max_tokens": 1024}.',
    )
    structured_output = models.CharField(
        "structured-output mode",
        max_length=32,
        blank=True,
        default=structured.NATIVE,
        choices=structured.choices(),
        help_text="How the judge asks its server for a verdict-shaped reply; servers differ. "
        "'Test connection' tries each mode and picks the first that works.",
    )
    weight = models.FloatField(default=1.0)
    price_input_per_mtok = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    price_output_per_mtok = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    max_concurrency = models.PositiveIntegerField(default=4)
    requests_per_minute = models.PositiveIntegerField(null=True, blank=True)
    timeout_seconds = models.FloatField(
        null=True,
        blank=True,
        help_text="Seconds to wait for one answer. Empty: sized from the max_tokens of params, "
        f"{TIMEOUT_RULE}.",
    )
    retry_budget_seconds = models.PositiveIntegerField(
        default=DEFAULT_RETRY_BUDGET_SECONDS,
        help_text="How long a call keeps trying, in seconds: backoffs between attempts, and "
        "waits while the provider is unreachable (its calls then pause without spending "
        "attempts; params max_attempts still caps the others). After that the call ends as a "
        "provider error; resume the run once the provider is back. The default outlives a "
        "server restart.",
    )
    is_active = models.BooleanField(default=True)
    created_at = models.DateTimeField(auto_now_add=True)

    # What an operator sets on a judge, in the admin form and in a definition file
    # (jury.judge_definitions) alike, in the form's order; docs/judges.md lists them.
    OPERATOR_FIELDS = (
        "name",
        "description",
        "provider",
        "model_id",
        "endpoint",
        "api_key_env",
        "params",
        "structured_output",
        "weight",
        "price_input_per_mtok",
        "price_output_per_mtok",
        "max_concurrency",
        "requests_per_minute",
        "timeout_seconds",
        "retry_budget_seconds",
        "is_active",
    )

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(condition=Q(weight__gt=0), name="judge_weight_positive"),
            models.CheckConstraint(
                condition=Q(price_input_per_mtok__gte=0, price_output_per_mtok__gte=0),
                name="judge_prices_nonnegative",
            ),
            models.CheckConstraint(
                condition=Q(max_concurrency__gte=1), name="judge_concurrency_positive"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    @property
    def request_timeout_seconds(self) -> float:
        """The timeout of one request: the judge's own, else sized from its max tokens."""
        if self.timeout_seconds:
            return float(self.timeout_seconds)
        return timeout_for_max_tokens(max_tokens_of(self.params))

    def policy_problems(self) -> dict[str, str]:
        """What the operator's rules refuse in this judge's key variable and endpoint, by
        field (settings JURY_ALLOWED_KEY_VARIABLES and JURY_ALLOWED_HOSTS)."""
        problems = {
            "api_key_env": key_variable_problem(
                self.api_key_env, allowed=getattr(settings, "JURY_ALLOWED_KEY_VARIABLES", ())
            ),
            "endpoint": endpoint_problem(
                self.endpoint, allowed_hosts=getattr(settings, "JURY_ALLOWED_HOSTS", ())
            ),
        }
        return {name: problem for name, problem in problems.items() if problem}

    def definition_problems(self) -> dict[str, str]:
        """What is wrong with this judge's definition beyond single fields, by field: the
        operator's rules (policy_problems), a structured-output mode its provider lacks, the
        old params switch that the mode replaced."""
        problems = self.policy_problems()
        mode_problem = structured.mode_problem(self.provider, self.structured_output)
        if mode_problem:
            problems["structured_output"] = mode_problem
        if isinstance(self.params, dict) and "structured_output" in self.params:
            problems["params"] = (
                "params.structured_output is no longer read: set the structured-output mode "
                "field instead ('none' for prompt only)."
            )
        return problems

    def clean(self) -> None:
        super().clean()
        problems = self.definition_problems()
        if problems:
            raise ValidationError(problems)


class PromptTemplate(models.Model):
    """A versioned prompt with named placeholders; a new edit is a new version."""

    name = models.CharField(max_length=100)
    version = models.PositiveIntegerField(default=1)
    study = models.ForeignKey(
        RatingStudy,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="prompt_templates",
    )
    system_text = models.TextField(blank=True)
    body = models.TextField()
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="prompt_template_version_once")
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"


class JuryRun(models.Model):
    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        FINISHED = "finished", "Finished"
        CANCELLED = "cancelled", "Cancelled"
        FAILED = "failed", "Failed"

    study = models.ForeignKey(RatingStudy, on_delete=models.CASCADE, related_name="jury_runs")
    prompt_template = models.ForeignKey(
        PromptTemplate, on_delete=models.PROTECT, related_name="runs"
    )
    judges = models.ManyToManyField(Judge, related_name="runs")
    filters = models.JSONField(
        default=dict, blank=True, help_text="Taxonomy node, model, item ids."
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    cancel_requested = models.BooleanField(default=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"jury run {self.pk} ({self.status})"


class JudgeCall(models.Model):
    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        OK = "ok", "OK"
        INVALID = "invalid_verdict", "Invalid verdict"
        PROVIDER_ERROR = "provider_error", "Provider error"
        TIMEOUT = "timeout", "Timeout"
        REFUSED = "refused", "Refused"
        TRUNCATED = "truncated", "Truncated"

    #: Every status but pending and ok: the call ended without a valid verdict.
    FAILED_STATUSES = (
        Status.INVALID,
        Status.PROVIDER_ERROR,
        Status.TIMEOUT,
        Status.REFUSED,
        Status.TRUNCATED,
    )

    run = models.ForeignKey(JuryRun, on_delete=models.CASCADE, related_name="calls")
    judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="calls")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="judge_calls")
    prompt_hash = models.CharField(max_length=64, db_index=True)
    system_text = models.TextField(blank=True)
    prompt_text = models.TextField()
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.PENDING)
    raw_output = models.TextField(blank=True)
    error = models.TextField(blank=True)
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    cost = models.DecimalField(max_digits=14, decimal_places=8, null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    attempts = models.PositiveSmallIntegerField(
        default=0, help_text="Requests sent for this call over all its executions."
    )
    finish_reason = models.CharField(
        max_length=32, blank=True, help_text="Why the provider stopped writing the stored reply."
    )
    cached_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="reused_by"
    )
    flags = models.JSONField(
        default=list,
        blank=True,
        help_text="Signs the evaluated response steered the verdict (jury.verdict_flags): "
        '[{"code": ..., "message": ...}].',
    )
    created_at = models.DateTimeField(auto_now_add=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    # When the call was last sent to the workers, and how often the sweep sent it again
    # because no worker held it (jury.execution.sweep).
    dispatched_at = models.DateTimeField(null=True, blank=True)
    sweeps = models.PositiveSmallIntegerField(default=0)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["run", "judge", "item"], name="judge_call_once_per_run")
        ]
        indexes = [models.Index(fields=["run", "status"])]

    def __str__(self) -> str:
        return f"call {self.pk}: {self.judge_id} on item {self.item_id} ({self.status})"


class JudgeAttempt(models.Model):
    """One request sent for a call: kept across retries, kills and resumes, so a call's
    failures stay visible after it ended well. `number` counts over all its executions."""

    call = models.ForeignKey(JudgeCall, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveSmallIntegerField()
    started_at = models.DateTimeField()
    latency_ms = models.PositiveIntegerField()
    #: "ok", "refused", "truncated", "invalid_verdict", or the failure kind of
    #: jury.execution.attempts ("timeout", "server_error", "rate_limited", ...).
    outcome = models.CharField(max_length=24)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    finish_reason = models.CharField(max_length=32, blank=True)

    #: What an attempt records, in the order pages and exports show it.
    RECORD_FIELDS = (
        "number",
        "started_at",
        "outcome",
        "http_status",
        "latency_ms",
        "input_tokens",
        "output_tokens",
        "finish_reason",
        "error",
    )

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["call", "number"], name="judge_attempt_number_once")
        ]

    def __str__(self) -> str:
        return f"attempt {self.number} of call {self.call_id}: {self.outcome}"


class JudgeScore(models.Model):
    """One judge's score for one item on one criterion: from a call, or imported (HELM)."""

    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="judge_scores")
    judge = models.ForeignKey(Judge, on_delete=models.PROTECT, related_name="scores")
    criterion = models.ForeignKey(
        RubricCriterion, on_delete=models.PROTECT, related_name="judge_scores"
    )
    call = models.ForeignKey(
        JudgeCall, null=True, blank=True, on_delete=models.CASCADE, related_name="scores"
    )
    value = models.FloatField(null=True, blank=True)
    is_valid = models.BooleanField(default=True)
    explanation = models.TextField(blank=True)
    # A call's verdict keeps its flags on the call; an imported verdict (no call) on each of
    # its scores. Null for a call's scores (they are inserted without this column).
    flags = models.JSONField(null=True, blank=True, help_text="An imported verdict's flags.")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["call", "criterion"],
                condition=Q(call__isnull=False),
                name="judge_score_once_per_call",
            ),
            models.UniqueConstraint(
                fields=["item", "judge", "criterion"],
                condition=Q(call__isnull=True),
                name="imported_judge_score_once",
            ),
            models.CheckConstraint(
                condition=Q(is_valid=False) | Q(value__isnull=False),
                name="valid_judge_score_has_value",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.judge_id} {self.criterion_id}={self.value} on item {self.item_id}"


# Kept in modules of their own (jury.models would pass ~450 lines); imported here so Django
# and `from jury.models import ...` find them.
from jury.limit_models import (  # noqa: E402, F401
    EndpointBreaker,
    EndpointLimit,
    JudgeLease,
    JudgeLimiter,
)
from jury.metric_models import MetricJob, MetricScore  # noqa: E402, F401
