from django.contrib import admin

from agreement import models


@admin.register(models.ReportSnapshot)
class ReportSnapshotAdmin(admin.ModelAdmin):
    list_display = ["id", "study", "title", "created_by", "created_at"]
    readonly_fields = ["parameters", "results", "method", "input_hash", "previous"]
