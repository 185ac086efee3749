from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import reverse
from django.utils.html import conditional_escape
from django.utils.safestring import mark_safe

from jury import models
from jury.connection_check import ConnectionReport, check_judge_connection
from jury.forms import EndpointLimitForm, JudgeAdminForm


def show_report(request: HttpRequest, report: ConnectionReport) -> None:
    """The connection test's report as one admin message: an error when it failed."""
    # One line each: the admin shows a message as one paragraph.
    text = mark_safe("<br>".join(conditional_escape(line) for line in report.lines()))
    level = messages.ERROR if report.failure else messages.SUCCESS
    messages.add_message(request, level, text)


@admin.register(models.Judge)
class JudgeAdmin(admin.ModelAdmin):
    form = JudgeAdminForm
    list_display = [
        "name",
        "provider",
        "model_id",
        "structured_output",
        "weight",
        "max_concurrency",
        "is_active",
    ]
    list_filter = ["provider", "is_active"]
    search_fields = ["name", "model_id"]
    actions = ["test_connection"]

    @admin.action(description="Test connection (and save the structured-output mode that works)")
    def test_connection(self, request: HttpRequest, queryset: QuerySet) -> None:
        for judge in queryset:
            show_report(request, check_judge_connection(judge=judge, save=True, actor=request.user))

    def response_change(self, request: HttpRequest, obj: models.Judge) -> HttpResponse:
        """The change form's "Test connection" button: the judge as saved, tested."""
        if "_test_connection" in request.POST:
            show_report(request, check_judge_connection(judge=obj, save=True, actor=request.user))
            return HttpResponseRedirect(reverse("admin:jury_judge_change", args=[obj.pk]))
        return super().response_change(request, obj)

    def formfield_for_dbfield(self, db_field: Any, request: HttpRequest, **kwargs: Any) -> Any:
        if db_field.name == "endpoint":  # as JudgeAdminForm reads it: no scheme means https
            kwargs.setdefault("assume_scheme", "https")
        return super().formfield_for_dbfield(db_field, request, **kwargs)


@admin.register(models.EndpointLimit)
class EndpointLimitAdmin(admin.ModelAdmin):
    form = EndpointLimitForm
    list_display = ["origin", "max_concurrency"]
    search_fields = ["origin"]


@admin.register(models.PromptTemplate)
class PromptTemplateAdmin(admin.ModelAdmin):
    list_display = ["name", "version", "study", "created_at"]


@admin.register(models.JuryRun)
class JuryRunAdmin(admin.ModelAdmin):
    list_display = ["id", "study", "status", "created_at", "finished_at"]
    list_filter = ["status"]


class JudgeAttemptInline(admin.TabularInline):
    """A call's attempts over all its executions: a record, never edited."""

    model = models.JudgeAttempt
    fields = readonly_fields = list(models.JudgeAttempt.RECORD_FIELDS)
    ordering = ["number"]
    extra = 0
    can_delete = False

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(models.JudgeCall)
class JudgeCallAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "judge", "item", "status", "attempts", "latency_ms", "cost"]
    list_filter = ["status", "judge"]
    raw_id_fields = ["item", "cached_from"]
    inlines = [JudgeAttemptInline]


@admin.register(models.JudgeScore)
class JudgeScoreAdmin(admin.ModelAdmin):
    list_display = ["item", "judge", "criterion", "value", "is_valid"]
    raw_id_fields = ["item", "call"]


@admin.register(models.MetricScore)
class MetricScoreAdmin(admin.ModelAdmin):
    list_display = ["item", "metric", "value", "scorer_model"]
    raw_id_fields = ["item"]
