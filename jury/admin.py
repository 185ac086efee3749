from django.contrib import admin

from jury import models


@admin.register(models.Judge)
class JudgeAdmin(admin.ModelAdmin):
    list_display = ["name", "provider", "model_id", "weight", "max_concurrency", "is_active"]
    list_filter = ["provider", "is_active"]
    search_fields = ["name", "model_id"]


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
