from django import forms
from django.contrib import admin

from annotation import models
from annotation.errors import AnnotationError
from annotation.services.membership import check_role_allowed
from medhelm_site.domain_errors import add_to_form


@admin.register(models.RubricTemplate)
class RubricTemplateAdmin(admin.ModelAdmin):
    list_display = ["name"]


class CriterionInline(admin.StackedInline):
    model = models.RubricCriterion
    extra = 0


class MembershipInline(admin.TabularInline):
    """Read only: members are added on the study's members page or as single memberships
    below, where the blinding rule is checked."""

    model = models.StudyMembership
    extra = 0
    fields = ["user", "role", "pseudonym", "is_active"]
    readonly_fields = fields

    def has_add_permission(self, request, obj=None):
        return False

    def has_change_permission(self, request, obj=None):
        return False

    def has_delete_permission(self, request, obj=None):
        return False


@admin.register(models.RatingStudy)
class RatingStudyAdmin(admin.ModelAdmin):
    list_display = ["name", "ratings_per_item", "taxonomy_version", "locked_at", "created_at"]
    search_fields = ["name"]
    inlines = [CriterionInline, MembershipInline]


@admin.register(models.Item)
class ItemAdmin(admin.ModelAdmin):
    list_display = ["external_id", "study", "model_name", "benchmark", "taxonomy_node"]
    list_filter = ["study", "model_name"]
    search_fields = ["external_id", "input_text"]
    list_select_related = ["study", "taxonomy_node"]
    raw_id_fields = ["taxonomy_node"]


class StudyMembershipForm(forms.ModelForm):
    """A membership as a site administrator edits it, refused as the members page refuses
    it when it breaks the blinding rule (services.membership.role_clash)."""

    class Meta:
        model = models.StudyMembership
        fields = ["study", "user", "role", "pseudonym", "is_active"]

    def clean(self):
        cleaned = super().clean()
        saved = self.instance
        # On a change the study, user and role are read-only: they come from the row.
        study = cleaned.get("study", saved.study if saved.study_id else None)
        user = cleaned.get("user", saved.user if saved.user_id else None)
        role = cleaned.get("role", saved.role)
        if study and user and role:
            try:
                check_role_allowed(
                    study=study,
                    user=user,
                    role=role,
                    active=bool(cleaned.get("is_active")),
                    ignore=self.instance.pk,
                )
            except AnnotationError as exc:
                add_to_form(self, exc)
        return cleaned


@admin.register(models.StudyMembership)
class StudyMembershipAdmin(admin.ModelAdmin):
    form = StudyMembershipForm

    def get_readonly_fields(self, request, obj=None):
        # A membership's study, user and role are its history (who has seen what): an
        # existing one can be renamed or (de)activated, not turned into another role.
        return ["study", "user", "role"] if obj is not None else []

    list_display = ["study", "user", "role", "pseudonym", "is_active"]
    list_filter = ["role", "is_active"]
    search_fields = ["user__username", "pseudonym"]


@admin.register(models.Assignment)
class AssignmentAdmin(admin.ModelAdmin):
    list_display = ["study", "clinician", "position", "item", "status", "flagged"]
    list_filter = ["status", "flagged", "study"]
    raw_id_fields = ["item"]
    list_select_related = ["study", "clinician", "item"]


@admin.register(models.Rating)
class RatingAdmin(admin.ModelAdmin):
    list_display = [
        "assignment",
        "criterion",
        "value",
        "cannot_assess",
        "first_value",
        "updated_at",
    ]
    raw_id_fields = ["assignment"]


@admin.register(models.ImportJob)
class ImportJobAdmin(admin.ModelAdmin):
    list_display = ["study", "file_format", "status", "processed_rows", "total_rows", "created_at"]
    list_filter = ["status"]


@admin.register(models.AuditEvent)
class AuditEventAdmin(admin.ModelAdmin):
    list_display = ["at", "study", "actor", "action", "target_type", "target_id"]
    list_filter = ["action"]

    def has_change_permission(self, request, obj=None):  # audit rows are append-only
        return False

    def has_delete_permission(self, request, obj=None):
        return False
