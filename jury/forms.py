"""Forms for the jury pages; they only shape input."""

from __future__ import annotations

from typing import Any

from django import forms

from annotation.models import RatingStudy
from jury.limits.endpoints import origin_of
from jury.models import EndpointLimit, Judge, PromptTemplate
from jury.selectors.runs import run_filter_choices
from medhelm_site.common.text_limits import column_max_length, json_text_problem


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
    models = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Only these evaluated models; none ticked: every model.",
    )
    taxonomy_node = forms.TypedChoiceField(
        required=False,
        coerce=int,
        empty_value=None,
        help_text="Only items under this taxonomy node.",
    )

    def __init__(self, *args: Any, study: RatingStudy | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        templates = PromptTemplate.objects.all()
        if study is not None:
            templates = templates.filter(study__in=[study]) | templates.filter(study__isnull=True)
        self.fields["template"].queryset = templates.order_by("name", "-version")
        # Picked from what the study holds, never typed: a typo used to match no item.
        choices = run_filter_choices(study=study) if study is not None else None
        self.fields["models"].choices = [
            (name, f"{name} ({n} items)") for name, n in (choices.models if choices else [])
        ]
        self.fields["taxonomy_node"].choices = [("", "Any (every item)")] + [
            (str(pk), f"{label} ({n} items)") for pk, label, n in (choices.nodes if choices else [])
        ]

    def filters(self) -> dict[str, Any]:
        """The item filters as start_run takes them (only those the user set)."""
        out: dict[str, Any] = {}
        if self.cleaned_data.get("models"):
            out["models"] = list(self.cleaned_data["models"])
        if self.cleaned_data.get("taxonomy_node") is not None:
            out["taxonomy_node"] = self.cleaned_data["taxonomy_node"]
        return out


class PromptForm(forms.Form):
    """A new version of a prompt template."""

    name = forms.SlugField(max_length=column_max_length(PromptTemplate, "name"))
    system_text = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False)
    body = forms.CharField(widget=forms.Textarea(attrs={"rows": 22, "class": "mono"}))


def _judge_formfield(field: Any, **kwargs: Any) -> forms.Field | None:
    """A judge field's form field; an endpoint without a scheme is read as https."""
    if field.name == "endpoint":
        kwargs.setdefault("assume_scheme", "https")
    return field.formfield(**kwargs)


class JudgeAdminForm(forms.ModelForm):
    """A judge in the admin: the model's clean() refuses a key variable or an endpoint host
    the operator has not allowed, with the reason and how to allow it; the help texts say so
    before anyone tries."""

    class Meta:
        model = Judge
        formfield_callback = _judge_formfield
        fields = list(Judge.OPERATOR_FIELDS)
        help_texts = {
            "api_key_env": "Name of the environment variable holding the API key: "
            "MEDHELM_JUDGE_KEY_<NAME>, or one listed in the JURY_ALLOWED_KEY_VARIABLES setting.",
            "endpoint": "Base URL; empty for the provider's default. Its host must be allowed "
            "by the JURY_ALLOWED_HOSTS setting (https; http only on loopback).",
        }

    def clean_params(self) -> Any:
        # Form text fields refuse a NUL character; JSON can still carry one ("\u0000"),
        # which a jsonb column refuses.
        params = self.cleaned_data["params"]
        problem = json_text_problem(params, where="params")
        if problem is not None:
            raise forms.ValidationError(problem)
        return params


class EndpointLimitForm(forms.ModelForm):
    """A server's limit: any URL on the server may be pasted (a judge's endpoint); it is
    stored as the origin every judge on that server is matched by."""

    class Meta:
        model = EndpointLimit
        fields = ["origin", "max_concurrency"]

    def clean_origin(self) -> str:
        origin = origin_of(self.cleaned_data["origin"])
        if not origin:
            raise forms.ValidationError("Give the server's URL, e.g. http://127.0.0.1:8080/v1.")
        return origin
