"""Forms for the jury pages; they only shape input."""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.models import RatingStudy
from jury.models import Judge, PromptTemplate


class StartRunForm(forms.Form):
    """Judges, a prompt version and the item filters of a new run."""

    judges = forms.ModelMultipleChoiceField(
        queryset=Judge.objects.filter(is_active=True).exclude(provider=Judge.Provider.IMPORTED),
        widget=forms.CheckboxSelectMultiple,
    )
    template = forms.ModelChoiceField(
        queryset=PromptTemplate.objects.none(),
        required=False,
        help_text="Empty: the MedHELM default prompt.",
    )
    models = forms.CharField(
        required=False, help_text="Only these evaluated models (comma-separated)."
    )
    taxonomy_node = forms.IntegerField(
        required=False, help_text="Only items under this taxonomy node (id)."
    )

    def __init__(self, *args: Any, study: RatingStudy | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        templates = PromptTemplate.objects.all()
        if study is not None:
            templates = templates.filter(study__in=[study]) | templates.filter(study__isnull=True)
        self.fields["template"].queryset = templates.order_by("name", "-version")

    def filters(self) -> dict[str, Any]:
        """The item filters as start_run takes them (only those the user set)."""
        out: dict[str, Any] = {}
        if self.cleaned_data.get("models"):
            out["models"] = [m.strip() for m in self.cleaned_data["models"].split(",") if m.strip()]
        if self.cleaned_data.get("taxonomy_node"):
            out["taxonomy_node"] = self.cleaned_data["taxonomy_node"]
        return out


class PromptForm(forms.Form):
    """A new version of a prompt template."""

    name = forms.SlugField(max_length=100)
    system_text = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False)
    body = forms.CharField(widget=forms.Textarea(attrs={"rows": 22, "class": "mono"}))
