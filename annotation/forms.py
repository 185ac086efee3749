"""Forms for the coordinator's pages. They only shape input; the services validate rules."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth import get_user_model

from annotation.models import ImportJob, RatingStudy, RubricCriterion
from delphi.models import TaxonomyVersion
from medhelm_site.common.text_limits import column_max_length


class StudyForm(forms.ModelForm):
    taxonomy_version = forms.ModelChoiceField(
        queryset=TaxonomyVersion.objects.filter(status=TaxonomyVersion.Status.RELEASED),
        required=False,
    )

    class Meta:
        model = RatingStudy
        fields = [
            "name",
            "instructions",
            "taxonomy_version",
            "ratings_per_item",
            "show_reference",
            "comment_required_at_or_below",
            "exclusion_metadata_key",
        ]
        widgets = {"instructions": forms.Textarea(attrs={"rows": 4})}


def anchors_to_text(anchors: dict[str, str]) -> str:
    return "\n".join(
        f"{point}={text}" for point, text in sorted(anchors.items(), key=lambda kv: int(kv[0]))
    )


class CriterionForm(forms.Form):
    key = forms.SlugField(max_length=column_max_length(RubricCriterion, "key"))
    label = forms.CharField(max_length=column_max_length(RubricCriterion, "label"))
    definition = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    scale_min = forms.IntegerField(initial=1)
    scale_max = forms.IntegerField(initial=5)
    anchors = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}),
        required=False,
        help_text='One per line: "1=Very poor".',
    )
    allow_cannot_assess = forms.BooleanField(required=False)
    allows_decimals = forms.BooleanField(
        required=False, help_text="Imported ratings may fall between the points (e.g. 3.5)."
    )

    def clean_anchors(self) -> dict[str, str]:
        anchors: dict[str, str] = {}
        for n, line in enumerate(self.cleaned_data["anchors"].splitlines(), start=1):
            if not line.strip():
                continue
            point, sep, text = line.partition("=")
            if not sep or not point.strip().lstrip("-").isdigit():
                raise forms.ValidationError(f'line {n}: write "point=text", e.g. "1=Very poor"')
            anchors[str(int(point))] = text.strip()
        return anchors


CriterionFormSet = forms.formset_factory(
    CriterionForm, extra=1, can_delete=True, min_num=1, validate_min=True
)


def criteria_initial(criteria: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [{**c, "anchors": anchors_to_text(c.get("anchors", {}))} for c in criteria]


IMPORT_FORMATS = [
    ("auto", "Detect from the file (content, then name)"),
    ("jsonl", "JSON Lines"),
    ("csv", "CSV"),
    ("helm", "HELM run (scenario_state.json or .zip)"),
]


class ImportForm(forms.Form):
    file_format = forms.ChoiceField(
        choices=IMPORT_FORMATS,
        initial="auto",
        label="Format",
        help_text="Detected unless you choose one: the page says which format was read and why.",
    )
    file = forms.FileField()
    on_bad_run = forms.ChoiceField(
        choices=ImportJob.OnBadRun.choices,
        initial=ImportJob.OnBadRun.REFUSE,
        required=False,  # absent: refuse
        label="A bad run in a HELM suite",
        help_text="For a zip of several HELM runs: refuse the whole suite, or skip the bad run "
        "(it is named, with its problems) and import the others.",
    )
    helm_completions = forms.ChoiceField(
        choices=ImportJob.Completions.choices,
        initial=ImportJob.Completions.FIRST,
        required=False,  # absent: first
        label="HELM requests with several completions",
        help_text="When a HELM run asked for several completions (num_outputs > 1): keep the "
        "first (the import summary counts the others), or import each as its own item.",
    )


class MemberForm(forms.Form):
    username = forms.CharField(
        # An e-mail may be longer than a username.
        max_length=max(
            column_max_length(get_user_model(), "username"),
            column_max_length(get_user_model(), "email"),
        ),
        help_text="Username or e-mail of an existing account.",
    )
    role = forms.ChoiceField(
        choices=[
            ("clinician", "Clinician"),
            ("coordinator", "Coordinator"),
            ("researcher", "Researcher"),
        ]
    )


class LongFileForm(forms.Form):
    """A long file of ratings or scores; its format is read from its name or content."""

    file = forms.FileField(help_text="CSV (with a header row) or JSON Lines.")


class SampleDrawForm(forms.Form):
    """The sampling page: which strata, total or quotas, seed, paired or not."""

    STRATA_CHOICES = [
        ("category", "Category"),
        ("subcategory", "Subcategory"),
        ("benchmark", "Benchmark"),
        ("model", "Model"),
    ]
    RULE_CHOICES = [
        ("proportional", "Proportional to a total (largest-remainder rounding)"),
        ("quotas", "Quotas per stratum"),
    ]

    strata = forms.MultipleChoiceField(
        label="Strata",
        choices=STRATA_CHOICES,
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="In a paired draw the model is not a stratum: each drawn case brings every "
        "model's output, so the models are balanced by construction (the preview says so).",
    )
    rule = forms.ChoiceField(label="Allocation", choices=RULE_CHOICES, widget=forms.RadioSelect)
    total = forms.IntegerField(
        label="Total to draw (cases when paired, else items)", min_value=0, required=False
    )
    quotas = forms.CharField(
        label="Quotas, one a line: stratum = n (labels as in the preview)",
        widget=forms.Textarea(attrs={"rows": 6}),
        required=False,
    )
    seed = forms.IntegerField(
        label="Seed (blank: a new one, shown in the preview)", min_value=0, required=False
    )
    paired = forms.BooleanField(
        label="Paired: draw cases and take every model's output for each", required=False
    )
    case_key = forms.ChoiceField(
        label="Items of one case share their",
        choices=[("external_id", "external id"), ("input_text", "input text")],
    )

    def clean(self) -> dict:
        data = super().clean()
        if data.get("rule") == "proportional" and data.get("total") is None:
            self.add_error("total", "Give the total to draw.")
        if data.get("rule") == "quotas" and not (data.get("quotas") or "").strip():
            self.add_error("quotas", "Give a quota per stratum, one a line.")
        return data
