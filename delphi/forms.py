"""Forms of the Delphi pages. They only shape input into the dicts the services take; the
services (and delphi.consensus / delphi.protocol) decide what is valid."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from django import forms
from django.http import QueryDict

from delphi import consensus, protocol
from delphi.models import DelphiStudy, Panelist, RoundItem, Suggestion, TaxonomyVersion
from delphi.services import TaxonomyFormatError, checked_taxonomy_tree, parse_taxonomy_file
from medhelm_site.common.errors import DomainError
from medhelm_site.common.text_limits import column_max_length


def sentence(message: str) -> str:
    """A service message ("cannot open round 1: ...") as a sentence for the page."""
    text = str(message).strip()
    return text[:1].upper() + text[1:] if text else "Something went wrong."


class TaxonomySourceForm(forms.Form):
    """Where a draft taxonomy comes from: the shipped MedHELM fixture, a stored version, or
    an uploaded JSON/CSV file. An upload is parsed in clean(), so a bad file is a form error
    before anything is written."""

    SOURCES = [
        ("fixture", "The published MedHELM taxonomy"),
        ("version", "An existing taxonomy version"),
        ("upload", "Upload a JSON or CSV file"),
    ]
    taxonomy_source = forms.ChoiceField(
        choices=SOURCES, initial="fixture", widget=forms.RadioSelect, label="Draft taxonomy"
    )
    taxonomy_version = forms.ModelChoiceField(
        queryset=TaxonomyVersion.objects.filter(nodes__isnull=False).distinct().order_by("name"),
        required=False,
        label="Existing version",
    )
    taxonomy_file = forms.FileField(
        required=False,
        label="File",
        help_text="JSON: {name, categories: [{name, subcategories: [...]}]}. "
        "CSV: columns category, subcategory, task, description.",
    )
    taxonomy_name = forms.CharField(
        max_length=column_max_length(TaxonomyVersion, "name"),
        required=False,
        label="Name of the imported version",
        help_text="Optional; defaults to the file's own name (CSV: the file name).",
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean()
        source = data.get("taxonomy_source")
        if source == "version" and not data.get("taxonomy_version"):
            self.add_error("taxonomy_version", "Choose a taxonomy version.")
        if source == "upload":
            upload = data.get("taxonomy_file")
            if upload is None:
                self.add_error("taxonomy_file", "Choose a file to upload.")
                return data
            try:
                tree = checked_taxonomy_tree(
                    parse_taxonomy_file(
                        filename=upload.name,
                        content=upload.read(),
                        name=(data.get("taxonomy_name") or "").strip(),
                    )
                )
            except TaxonomyFormatError as exc:
                self.add_error("taxonomy_file", str(exc))
                return data
            data["taxonomy_tree"] = tree
        return data


class NewStudyForm(TaxonomySourceForm):
    title = forms.CharField(max_length=column_max_length(DelphiStudy, "title"))
    aims = forms.CharField(widget=forms.Textarea(attrs={"rows": 4}), required=False)
    field_order = ["title", "aims"]


# --------------------------------------------------------------------------- protocol

RULE_PRESET_CHOICES = [
    ("comet_70_15", "COMET (>= x% rate 7-9 and < y% rate 1-3)"),
    ("percent_agreement", "Percent agreement (>= x% rate 7-9)"),
    ("median_iqr", "Median and IQR (median >= 7, IQR <= 1)"),
    ("rand_ucla", "RAND/UCLA (median band, no disagreement)"),
]
# The threshold fields of all presets; each preset reads only its own (no name is shared).
THRESHOLD_FIELDS = (
    "agree_pct_at_least",
    "oppose_pct_below",
    "pct_at_least",
    "median_at_least",
    "iqr_at_most",
    "out_median_at_most",
)


def _number(value: float) -> int | float:
    """70.0 -> 70, so the stored (hashed) rule reads as the coordinator typed it."""
    return int(value) if float(value).is_integer() else value


def _preset_thresholds(name: str) -> tuple[str, ...]:
    defaults = consensus.rule_to_dict(consensus.PRESETS[name]())
    return tuple(key for key in defaults if key not in ("preset", "min_n"))


class ProtocolForm(forms.Form):
    title = forms.CharField(max_length=column_max_length(DelphiStudy, "title"))
    aims = forms.CharField(widget=forms.Textarea(attrs={"rows": 3}), required=False)

    rate_kinds = forms.MultipleChoiceField(
        choices=[(kind, kind.title()) for kind in protocol.NODE_KINDS],
        widget=forms.CheckboxSelectMultiple,
        label="Levels rated 1-9",
    )
    allow_unable_to_rate = forms.BooleanField(required=False, label='Offer "unable to rate"')
    placement = forms.ChoiceField(
        choices=[
            ("none", "Not asked"),
            ("agree", "Does it belong under its parent? (yes/no)"),
            ("choose", "Choose the category it belongs to"),
        ],
        widget=forms.RadioSelect,
        label="Placement question",
    )
    comments = forms.BooleanField(required=False, label="Free-text comment per item")
    comprehensiveness = forms.BooleanField(
        required=False, label="Rate the comprehensiveness of the whole taxonomy (1-5) per round"
    )

    rule_preset = forms.ChoiceField(choices=RULE_PRESET_CHOICES, label="Consensus rule")
    agree_pct_at_least = forms.FloatField(required=False, label="COMET: % rating 7-9 at least")
    oppose_pct_below = forms.FloatField(required=False, label="COMET: % rating 1-3 below")
    pct_at_least = forms.FloatField(required=False, label="Percent agreement: % at least")
    median_at_least = forms.FloatField(required=False, label="Median/IQR: median at least")
    iqr_at_most = forms.FloatField(required=False, label="Median/IQR: IQR at most")
    out_median_at_most = forms.FloatField(
        required=False, label="Median/IQR: median at most for consensus out"
    )
    min_n = forms.IntegerField(min_value=1, initial=1, label="Minimum number of ratings")
    rule_json = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 6, "class": "mono"}),
        label="Advanced: rule as JSON",
        help_text='Overrides the preset when filled, e.g. {"op": "and", "rules": '
        '[{"preset": "comet_70_15"}, {"preset": "median_iqr"}]}.',
    )

    carry_over = forms.ChoiceField(
        choices=DelphiStudy.CarryOver.choices, widget=forms.RadioSelect, label="Carry-over"
    )
    max_rounds = forms.IntegerField(required=False, min_value=1, label="Stop after at most")
    all_resolved = forms.BooleanField(
        required=False, label="Stop when every item reached consensus (in or out)"
    )
    stability_pct = forms.FloatField(
        required=False,
        label="Stop when every unresolved item has at least this % of panelists unchanged",
    )
    ask_reason_outside_iqr = forms.BooleanField(
        required=False, label="Ask for a reason when a rating falls outside the panel's IQR"
    )

    @classmethod
    def initial_for(cls, study: DelphiStudy) -> dict[str, Any]:
        questions = protocol.validate_questions(study.questions)
        rule = consensus.validate_rule(study.consensus_rule)
        stopping = study.stopping_rule or {}
        initial: dict[str, Any] = {}
        # Every preset's defaults first, so switching preset shows sensible thresholds.
        for preset in consensus.PRESETS.values():
            defaults = consensus.rule_to_dict(preset())
            initial.update({k: v for k, v in defaults.items() if k in THRESHOLD_FIELDS})
        initial.update(
            {
                "title": study.title,
                "aims": study.aims,
                **questions,
                "carry_over": study.carry_over,
                "max_rounds": stopping.get("max_rounds"),
                "all_resolved": bool(stopping.get("all_resolved")),
                "stability_pct": (stopping.get("stability") or {}).get("pct_unchanged_at_least"),
                "ask_reason_outside_iqr": study.ask_reason_outside_iqr,
                "min_n": rule["min_n"],
            }
        )
        if "preset" in rule:
            initial["rule_preset"] = rule["preset"]
            initial.update({k: v for k, v in rule.items() if k in THRESHOLD_FIELDS})
        else:
            # A composite has no form of its own: it is edited as JSON.
            initial["rule_preset"] = "comet_70_15"
            initial["rule_json"] = json.dumps(rule, indent=2)
        return initial

    def clean_rule_json(self) -> Any:
        text = self.cleaned_data["rule_json"].strip()
        if not text:
            return None
        try:
            return json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(
                f"not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}"
            ) from None
        except RecursionError:
            # The decoder recurses once per nested array or object.
            raise forms.ValidationError("nested too deeply to be a consensus rule") from None

    def consensus_rule(self) -> dict[str, Any]:
        data = self.cleaned_data
        if data.get("rule_json") is not None:
            return data["rule_json"]
        name = data["rule_preset"]
        rule: dict[str, Any] = {"preset": name, "min_n": data["min_n"]}
        for key in _preset_thresholds(name):
            if data.get(key) is not None:
                rule[key] = _number(data[key])
        return rule

    def stopping_rule(self) -> dict[str, Any]:
        data = self.cleaned_data
        rule: dict[str, Any] = {}
        if data.get("max_rounds"):
            rule["max_rounds"] = data["max_rounds"]
        if data.get("all_resolved"):
            rule["all_resolved"] = True
        if data.get("stability_pct") is not None:
            rule["stability"] = {"pct_unchanged_at_least": _number(data["stability_pct"])}
        return rule

    def changes(self) -> dict[str, Any]:
        """The protocol fields for `update_protocol`."""
        data = self.cleaned_data
        return {
            "title": data["title"],
            "aims": data["aims"],
            "questions": {
                "rate_kinds": list(data["rate_kinds"]),
                "allow_unable_to_rate": data["allow_unable_to_rate"],
                "placement": data["placement"],
                "comments": data["comments"],
                "comprehensiveness": data["comprehensiveness"],
            },
            "consensus_rule": self.consensus_rule(),
            "carry_over": data["carry_over"],
            "stopping_rule": self.stopping_rule(),
            "ask_reason_outside_iqr": data["ask_reason_outside_iqr"],
        }

    # The protocol field a service's error names (DelphiError.field) -> the form field
    # that shows it; a composite rule is edited as JSON, so its errors go there.
    SERVICE_FIELDS = {
        "consensus_rule": "rule_preset",
        "stopping_rule": "max_rounds",
        "questions": "rate_kinds",
        "title": "title",
    }

    def add_service_error(self, error: DomainError) -> None:
        """Show a service's error on the field it is about, else on the whole form."""
        field = self.SERVICE_FIELDS.get(error.field or "")
        if field == "rule_preset" and self.cleaned_data.get("rule_json") is not None:
            field = "rule_json"
        self.add_error(field, sentence(error.message))


# --------------------------------------------------------------------------- panel and rounds


class InviteForm(forms.Form):
    email = forms.EmailField(max_length=column_max_length(Panelist, "email"))
    stakeholder_group = forms.CharField(
        max_length=column_max_length(Panelist, "stakeholder_group"),
        required=False,
        help_text="Statistics per group are shown once a group has 5 raters.",
    )
    specialty = forms.CharField(max_length=column_max_length(Panelist, "specialty"), required=False)


class ReasonForm(forms.Form):
    """Withdrawing a panelist, finishing a study early: a reason, required or not by the
    service (finishing needs one only when the stopping rule is not met)."""

    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)


class OpenRoundForm(forms.Form):
    closes_at = forms.DateTimeField(
        required=False,
        widget=forms.DateTimeInput(attrs={"type": "datetime-local"}),
        label="Closing date (optional, shown to panelists)",
    )


class TriageForm(forms.Form):
    decision = forms.ChoiceField(choices=[("accept", "Accept"), ("reject", "Reject")])
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)


class ReleaseForm(forms.Form):
    name = forms.CharField(
        max_length=column_max_length(TaxonomyVersion, "name"),
        required=False,
        label="Name of the released version",
    )
    description = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)


# --------------------------------------------------------------------------- the panel's forms

ANSWER_FIELDS = ("rating", "unable", "placement_agrees", "placement_choice", "comment", "reason")


def questionnaire_answers(
    data: QueryDict, *, items: Iterable[RoundItem], answered: set[int]
) -> dict[str, dict[str, Any]]:
    """The answers a normal (no-JS) questionnaire post carries, in the services' shape
    ({round item id: {rating, unable, ...}}).

    Only items the panelist touched, or answered before (so that clearing a field counts),
    are sent: an untouched item must not become an empty response row.
    """
    answers: dict[str, dict[str, Any]] = {}
    for item in items:
        prefix = f"item-{item.pk}-"
        raw = {key: data.get(prefix + key, "") for key in ANSWER_FIELDS}
        if raw["unable"]:
            # Without JS a chosen radio cannot be cleared, so "unable to rate" wins over it
            # (with JS the page unticks the rating itself).
            raw["rating"] = ""
        if item.pk in answered or any(str(value).strip() for value in raw.values()):
            answers[str(item.pk)] = raw
    return answers


# Form field -> details key, per kind; the service refuses keys a kind does not take.
SUGGESTION_FIELDS = {
    Suggestion.Kind.ADD: {
        "name": "name",
        "new_kind": "kind",
        "parent": "parent_identity",
        "description": "description",
    },
    Suggestion.Kind.RENAME: {"name": "name"},
    Suggestion.Kind.MOVE: {"parent": "parent_identity"},
    Suggestion.Kind.MERGE: {"into": "into_identity"},
    Suggestion.Kind.DELETE: {},
}


def suggestion_details(data: QueryDict) -> dict[str, str]:
    """The details of a suggestion from the questionnaire's suggestion form: only the fields
    of the chosen kind (the form shows them all)."""
    kind = data.get("kind", "")
    fields = SUGGESTION_FIELDS.get(kind, {})
    details = {key: data.get(name, "").strip() for name, key in fields.items()}
    # A category is added without a parent; the form still shows the parent select.
    if kind == Suggestion.Kind.ADD and details.get("kind") == "category":
        details.pop("parent_identity", None)
    return details
