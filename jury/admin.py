from typing import Any

from django.contrib import admin
from django.http import HttpRequest

from jury import models
from jury.forms import EndpointLimitForm, JudgeAdminForm


@admin.register(models.Judge)
class JudgeAdmin(admin.ModelAdmin):
    form = JudgeAdminForm
    list_display = ["name", "provider", "model_id", "weight", "max_concurrency", "is_active"]
    list_filter = ["provider", "is_active"]
    search_fields = ["name", "model_id"]

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


@admin.register(models.JudgeCall)
class JudgeCallAdmin(admin.ModelAdmin):
    list_display = ["id", "run", "judge", "item", "status", "attempts", "latency_ms", "cost"]
    list_filter = ["status", "judge"]
    raw_id_fields = ["item", "cached_from"]


@admin.register(models.JudgeScore)
class JudgeScoreAdmin(admin.ModelAdmin):
    list_display = ["item", "judge", "criterion", "value", "is_valid"]
    raw_id_fields = ["item", "call"]


@admin.register(models.MetricScore)
class MetricScoreAdmin(admin.ModelAdmin):
    list_display = ["item", "metric", "value", "scorer_model"]
    raw_id_fields = ["item"]
