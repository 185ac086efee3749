"""The coordinator's pages of a Delphi study: create, overview, protocol, panel, rounds and
exports, and one POST endpoint per action.

Views are thin: parse the form, check access (delphi.access: 404 for outsiders, 403 for
panelists), call one service, redirect with a message. Services raise ValueError subclasses
(DelphiError, TaxonomyFormatError, RuleError) whose messages are written for users; they are
shown as messages or form errors, never as a 500.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.forms import Form
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme
from django.views.decorators.http import require_POST

from delphi import consensus, exports, services
from delphi.access import get_study_for_coordinator
from delphi.forms import (
    InviteForm,
    NewStudyForm,
    OpenRoundForm,
    ProtocolForm,
    ReasonForm,
    ReleaseForm,
    TaxonomySourceForm,
    TriageForm,
)
from delphi.models import (
    DelphiStudy,
    Panelist,
    PanelistRound,
    Round,
    RoundItem,
    RoundItemStatistics,
    Suggestion,
    TaxonomyVersion,
)

# --------------------------------------------------------------------------- helpers


def _sentence(exc: Exception | str) -> str:
    """A service message ("cannot open round 1: ...") as a sentence for the page."""
    text = str(exc).strip()
    return text[:1].upper() + text[1:] if text else "Something went wrong."


def _base_url(request: HttpRequest) -> str:
    # Links in invitation and reminder e-mails point back at the host the coordinator used.
    return request.build_absolute_uri("/")


def _back(request: HttpRequest, default: str) -> HttpResponse:
    """Back to the page the form was on (a local `next`), else `default`."""
    target = request.POST.get("next", "")
    if target and url_has_allowed_host_and_scheme(
        target, allowed_hosts={request.get_host()}, require_https=request.is_secure()
    ):
        return redirect(target)
    return redirect(default)


def _form_problems(form: Form) -> str:
    parts = []
    for name, errors in form.errors.items():
        label = form.fields[name].label if name in form.fields else ""
        parts.append(
            f"{label or name}: {' '.join(errors)}" if name != "__all__" else " ".join(errors)
        )
    return "; ".join(parts)


def _round_of(study: DelphiStudy, number: int) -> Round:
    return get_object_or_404(Round, study=study, number=number)


def _draft_taxonomy(data: dict[str, Any]) -> TaxonomyVersion:
    """The draft taxonomy a TaxonomySourceForm chose, importing an uploaded file."""
    source = data["taxonomy_source"]
    if source == "fixture":
        return services.ensure_medhelm_taxonomy()
    if source == "version":
        return data["taxonomy_version"]
    return services.create_taxonomy_version(
        tree=data["taxonomy_tree"], source=TaxonomyVersion.Source.IMPORT
    )


def describe_rule(rule: dict[str, Any]) -> str:
    try:
        return consensus.rule_from_dict(rule).describe()
    except ValueError as exc:
        return f"Invalid rule: {exc}"


@dataclass
class RoundSummary:
    round: Round
    items: int
    invited: int  # panelists asked in this round, excluding those who withdrew
    submitted: int
    outcomes: dict[str, int] = field(default_factory=dict)

    @property
    def response_rate(self) -> int | None:
        return round(100 * self.submitted / self.invited) if self.invited else None


def _round_summaries(study: DelphiStudy) -> list[RoundSummary]:
    rounds = list(study.rounds.order_by("number"))
    statuses: dict[int, Counter[str]] = defaultdict(Counter)
    for round_id, status in PanelistRound.objects.filter(round__study=study).values_list(
        "round_id", "status"
    ):
        statuses[round_id][status] += 1
    items = Counter(RoundItem.objects.filter(round__study=study).values_list("round_id", flat=True))
    outcomes: dict[int, Counter[str]] = defaultdict(Counter)
    for round_id, outcome in RoundItemStatistics.objects.filter(
        round_item__round__study=study, group=""
    ).values_list("round_item__round_id", "outcome"):
        outcomes[round_id][outcome] += 1
    summaries = []
    for round_ in rounds:
        counted = statuses[round_.pk]
        summaries.append(
            RoundSummary(
                round=round_,
                items=items[round_.pk],
                invited=sum(counted.values()) - counted[PanelistRound.Status.WITHDRAWN],
                submitted=counted[PanelistRound.Status.SUBMITTED],
                outcomes={k.replace("_", " "): v for k, v in sorted(outcomes[round_.pk].items())},
            )
        )
    return summaries


def _panel_counts(study: DelphiStudy) -> dict[str, int]:
    panelists = list(study.panelists.values_list("user_id", "withdrawn_at"))
    return {
        "invited": len(panelists),
        "joined": sum(1 for user, gone in panelists if user is not None and gone is None),
        "not_joined": sum(1 for user, gone in panelists if user is None and gone is None),
        "withdrawn": sum(1 for _, gone in panelists if gone is not None),
    }


# --------------------------------------------------------------------------- create, overview


@login_required
def create_study(request: HttpRequest) -> HttpResponse:
    # As for rating studies, creating is for those the site administrator allows (staff).
    if not request.user.has_perm("delphi.add_delphistudy"):
        raise PermissionDenied("You may not create Delphi studies; ask a site administrator.")
    form = NewStudyForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        try:
            # Importing the draft and creating the study succeed or fail together: a failed
            # study must not leave an orphan imported taxonomy behind.
            with transaction.atomic():
                study = services.create_delphi_study(
                    title=form.cleaned_data["title"],
                    aims=form.cleaned_data["aims"],
                    draft_taxonomy=_draft_taxonomy(form.cleaned_data),
                    created_by=request.user,
                )
        except ValueError as exc:
            form.add_error(None, _sentence(exc))
        else:
            messages.success(
                request, "Delphi study created. Set the protocol up and invite the panel next."
            )
            return redirect("delphi:study", study_id=study.pk)
    return render(request, "delphi/study_form.html", {"form": form})


@login_required
def study_page(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    summaries = _round_summaries(study)
    latest = summaries[-1].round if summaries else None
    return render(
        request,
        "delphi/study.html",
        {
            "study": study,
            "panel": _panel_counts(study),
            "rounds": summaries,
            "latest": latest,
            "stopping": latest.stopping_decision if latest else None,
            "rule_text": describe_rule(study.consensus_rule),
            "stopping_text": exports.describe_stopping_rule(study.stopping_rule),
            "open_form": OpenRoundForm(),
            "export_names": exports.EXPORT_NAMES,
            "coordinators": study.coordinators.select_related("user").order_by("added_at"),
        },
    )


# --------------------------------------------------------------------------- protocol


@login_required
def protocol_page(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    in_setup = study.status == DelphiStudy.Status.SETUP
    form = None
    if request.method == "POST":
        if not in_setup:
            messages.error(request, "The protocol is locked; it can no longer change.")
            return redirect("delphi:protocol", study_id=study.pk)
        form = ProtocolForm(request.POST)
        if form.is_valid():
            try:
                services.update_protocol(study=study, actor=request.user, changes=form.changes())
            except ValueError as exc:
                form.add_service_error(_sentence(exc))
            else:
                messages.success(request, "Protocol saved.")
                return redirect("delphi:protocol", study_id=study.pk)
    elif in_setup:
        form = ProtocolForm(initial=ProtocolForm.initial_for(study))
    document = services.current_protocol_document(study)
    return render(
        request,
        "delphi/protocol.html",
        {
            "study": study,
            "in_setup": in_setup,
            "form": form,
            "taxonomy_form": TaxonomySourceForm(
                initial={"taxonomy_source": "version", "taxonomy_version": study.draft_taxonomy}
            )
            if in_setup
            else None,
            "document": document,
            "document_json": json.dumps(document, indent=2, ensure_ascii=False),
            "rule_text": describe_rule(document["consensus_rule"]),
            "stopping_text": exports.describe_stopping_rule(document["stopping_rule"]),
            "taxonomy": document["taxonomy_draft"],
        },
    )


@login_required
@require_POST
def change_taxonomy(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    form = TaxonomySourceForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, _form_problems(form))
        return redirect("delphi:protocol", study_id=study.pk)
    try:
        with transaction.atomic():  # no orphan import when the study refuses the change
            taxonomy = _draft_taxonomy(form.cleaned_data)
            services.set_draft_taxonomy(study=study, actor=request.user, taxonomy=taxonomy)
    except ValueError as exc:
        messages.error(request, _sentence(exc))
    else:
        messages.success(request, f"The draft taxonomy is now {taxonomy.name!r}.")
    return redirect("delphi:protocol", study_id=study.pk)


@login_required
@require_POST
def lock_protocol(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    if request.POST.get("confirm") != "yes":
        messages.error(request, "Tick the box to confirm: locking cannot be undone.")
        return redirect("delphi:protocol", study_id=study.pk)
    try:
        study = services.lock_protocol(study=study, actor=request.user)
    except ValueError as exc:
        messages.error(request, _sentence(exc))
        return redirect("delphi:protocol", study_id=study.pk)
    messages.success(
        request,
        f"Protocol locked (SHA-256 {study.protocol_hash[:12]}…); round 1 is drafted from the "
        "taxonomy.",
    )
    return redirect("delphi:study", study_id=study.pk)


# --------------------------------------------------------------------------- panel


@login_required
def panel_page(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    form = InviteForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            panelist, _token = services.invite_panelist(
                study=study,
                actor=request.user,
                email=form.cleaned_data["email"],
                base_url=_base_url(request),
                stakeholder_group=form.cleaned_data["stakeholder_group"],
                specialty=form.cleaned_data["specialty"],
            )
        except ValueError as exc:
            form.add_error("email", _sentence(exc))
        else:
            messages.success(
                request,
                f"{panelist.email} invited as {panelist.pseudonym}; the one-time link is on "
                "its way by e-mail.",
            )
            return redirect("delphi:panelists", study_id=study.pk)
    rounds = list(study.rounds.order_by("number"))
    status_of = {
        (entry.panelist_id, entry.round_id): entry
        for entry in PanelistRound.objects.filter(round__study=study)
    }
    panelists = list(study.panelists.order_by("pseudonym"))
    rows = [
        {"panelist": p, "rounds": [status_of.get((p.pk, r.pk)) for r in rounds]} for p in panelists
    ]
    return render(
        request,
        "delphi/panelists.html",
        {
            "study": study,
            "form": form,
            "rows": rows,
            "rounds": rounds,
            "counts": _panel_counts(study),
            "can_invite": study.status
            not in (DelphiStudy.Status.FINISHED, DelphiStudy.Status.RELEASED),
        },
    )


def _panelist_of(study: DelphiStudy, panelist_id: int) -> Panelist:
    return get_object_or_404(Panelist, study=study, pk=panelist_id)


@login_required
@require_POST
def renew_invitation(request: HttpRequest, study_id: int, panelist_id: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    panelist = _panelist_of(study, panelist_id)
    try:
        services.renew_invitation(
            panelist=panelist, actor=request.user, base_url=_base_url(request)
        )
    except ValueError as exc:
        messages.error(request, _sentence(exc))
    else:
        messages.success(
            request, f"A new link went to {panelist.email}; the old one no longer works."
        )
    return redirect("delphi:panelists", study_id=study.pk)


@login_required
@require_POST
def withdraw_panelist(request: HttpRequest, study_id: int, panelist_id: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    panelist = _panelist_of(study, panelist_id)
    form = ReasonForm(request.POST)
    reason = form.cleaned_data["reason"] if form.is_valid() else ""
    try:
        services.withdraw_panelist(panelist=panelist, actor=request.user, reason=reason)
    except ValueError as exc:
        messages.error(request, _sentence(exc))
    else:
        messages.success(
            request,
            f"{panelist.pseudonym} withdrawn; answers already submitted stay in their rounds.",
        )
    return redirect("delphi:panelists", study_id=study.pk)


# --------------------------------------------------------------------------- rounds


@dataclass
class ItemRow:
    item: RoundItem
    whole: RoundItemStatistics | None
    groups: list[RoundItemStatistics | None]


def _describe_suggestion(suggestion: Suggestion, names: dict[str, str]) -> str:
    def name(identity: Any) -> str:
        return repr(names.get(str(identity), "an item no longer in the round"))

    details = suggestion.details
    target = name(suggestion.target_identity)
    if suggestion.kind == Suggestion.Kind.ADD:
        where = (
            f" under {name(details['parent_identity'])}" if details.get("parent_identity") else ""
        )
        return f"add {details.get('kind', 'subcategory')} {details.get('name', '')!r}{where}"
    if suggestion.kind == Suggestion.Kind.RENAME:
        return f"rename {target} to {details.get('name', '')!r}"
    if suggestion.kind == Suggestion.Kind.MOVE:
        return f"move {target} under {name(details.get('parent_identity'))}"
    if suggestion.kind == Suggestion.Kind.MERGE:
        return f"merge {target} into {name(details.get('into_identity'))}"
    return f"delete {target}"


@login_required
def round_page(request: HttpRequest, study_id: int, number: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    round_ = _round_of(study, number)
    items = list(round_.items.order_by("position", "id"))
    by_item: dict[int, dict[str, RoundItemStatistics]] = defaultdict(dict)
    for row in RoundItemStatistics.objects.filter(round_item__round=round_):
        row.outcome_label = row.outcome.replace("_", " ")  # "consensus_in" -> "consensus in"
        by_item[row.round_item_id][row.group] = row
    groups = sorted({g for rows in by_item.values() for g in rows if g})
    item_rows = [
        ItemRow(
            item=item,
            whole=by_item[item.pk].get(""),
            groups=[by_item[item.pk].get(g) for g in groups],
        )
        for item in items
    ]
    names = {str(item.identity): item.name for item in items}
    suggestions = [
        (s, _describe_suggestion(s, names))
        for s in round_.suggestions.select_related("panelist", "triaged_by").order_by("id")
    ]
    next_exists = study.rounds.filter(number=number + 1).exists()
    statistics = (study.protocol_document or {}).get("statistics", {})
    return render(
        request,
        "delphi/round.html",
        {
            "study": study,
            "round": round_,
            "rows": item_rows,
            "groups": groups,
            "analysed": round_.status in (Round.Status.ANALYSED, Round.Status.FEEDBACK_RELEASED),
            "min_group": statistics.get("min_group_raters", 5),
            "entries": round_.panelist_rounds.select_related("panelist").order_by(
                "panelist__pseudonym"
            ),
            "suggestions": suggestions,
            "can_triage": not next_exists
            and round_.status not in (Round.Status.DRAFT, Round.Status.OPEN),
            "open_form": OpenRoundForm(),
        },
    )


def _round_action(
    request: HttpRequest, study_id: int, number: int, act: Callable[[Round], str]
) -> HttpResponse:
    """Run `act(round_)` for a round action; its return value is the success message."""
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    round_ = _round_of(study, number)
    try:
        message = act(round_)
    except ValueError as exc:
        messages.error(request, _sentence(exc))
    else:
        messages.success(request, message)
    return _back(request, reverse("delphi:round_detail", args=[study.pk, number]))


@login_required
@require_POST
def open_round(request: HttpRequest, study_id: int, number: int) -> HttpResponse:
    form = OpenRoundForm(request.POST)

    def act(round_: Round) -> str:
        if not form.is_valid():
            raise ValueError(_form_problems(form))
        services.open_round(
            round_=round_,
            actor=request.user,
            base_url=_base_url(request),
            closes_at=form.cleaned_data["closes_at"],
        )
        return f"Round {round_.number} is open; joined panelists were told by e-mail."

    return _round_action(request, study_id, number, act)


@login_required
@require_POST
def send_reminders(request: HttpRequest, study_id: int, number: int) -> HttpResponse:
    def act(round_: Round) -> str:
        count = services.send_reminders(
            round_=round_, actor=request.user, base_url=_base_url(request)
        )
        return f"Reminders sent to {count} panelist(s) who have not submitted."

    return _round_action(request, study_id, number, act)


@login_required
@require_POST
def close_round(request: HttpRequest, study_id: int, number: int) -> HttpResponse:
    def act(round_: Round) -> str:
        services.close_round(round_=round_, actor=request.user)
        return f"Round {round_.number} closed; who did not submit is a non-responder."

    return _round_action(request, study_id, number, act)


@login_required
@require_POST
def analyse_round(request: HttpRequest, study_id: int, number: int) -> HttpResponse:
    def act(round_: Round) -> str:
        services.analyse_round(round_=round_, actor=request.user)
        return f"Round {round_.number} analysed under the locked consensus rule."

    return _round_action(request, study_id, number, act)


@login_required
@require_POST
def release_feedback(request: HttpRequest, study_id: int, number: int) -> HttpResponse:
    def act(round_: Round) -> str:
        services.release_feedback(round_=round_, actor=request.user)
        return f"The feedback of round {round_.number} is visible to the panel."

    return _round_action(request, study_id, number, act)


@login_required
@require_POST
def triage_suggestion(
    request: HttpRequest, study_id: int, number: int, suggestion_id: int
) -> HttpResponse:
    form = TriageForm(request.POST)

    def act(round_: Round) -> str:
        suggestion = get_object_or_404(Suggestion, round=round_, pk=suggestion_id)
        if not form.is_valid():
            raise ValueError(_form_problems(form))
        suggestion = services.triage_suggestion(
            suggestion=suggestion,
            actor=request.user,
            accept=form.cleaned_data["decision"] == "accept",
            reason=form.cleaned_data["reason"],
        )
        return f"Suggestion {suggestion.get_status_display().lower()}."

    return _round_action(request, study_id, number, act)


@login_required
@require_POST
def start_next_round(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    try:
        round_ = services.start_next_round(study=study, actor=request.user)
    except ValueError as exc:
        messages.error(request, _sentence(exc))
        return redirect("delphi:study", study_id=study.pk)
    messages.success(
        request, f"Round {round_.number} drafted with {round_.items.count()} item(s); open it."
    )
    return redirect("delphi:round_detail", study_id=study.pk, number=round_.number)


# --------------------------------------------------------------------------- finish, release


@login_required
@require_POST
def finish_study(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    form = ReasonForm(request.POST)
    reason = form.cleaned_data["reason"] if form.is_valid() else ""
    try:
        study = services.finish_study(study=study, actor=request.user, reason=reason)
    except ValueError as exc:
        messages.error(request, _sentence(exc))
    else:
        messages.success(request, f"Study finished ({study.finished_reason}).")
    return redirect("delphi:study", study_id=study.pk)


@login_required
@require_POST
def release_taxonomy(request: HttpRequest, study_id: int) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    form = ReleaseForm(request.POST)
    data = form.cleaned_data if form.is_valid() else {"name": "", "description": ""}
    try:
        summary = services.release_taxonomy(
            study=study, actor=request.user, name=data["name"], description=data["description"]
        )
    except ValueError as exc:
        messages.error(request, _sentence(exc))
    else:
        messages.success(
            request,
            f"Released {summary.version.name!r} with {summary.included} node(s); "
            f"{len(summary.excluded)} left out.",
        )
    return redirect("delphi:study", study_id=study.pk)


# --------------------------------------------------------------------------- exports


@login_required
def export(request: HttpRequest, study_id: int, name: str) -> HttpResponse:
    study = get_study_for_coordinator(user=request.user, study_id=study_id)
    if name not in exports.EXPORT_NAMES:
        raise Http404("No such export.")
    try:
        content, content_type, filename = exports.render_export(study=study, name=name)
    except ValueError as exc:
        # E.g. a report asked for before any round was analysed: say why, not a 500.
        return render(
            request,
            "delphi/export_error.html",
            {"study": study, "name": name, "message": _sentence(exc)},
            status=400,
        )
    response = HttpResponse(content, content_type=content_type)
    # The HTML report and checklist open in the browser (their own pages, no scripts); the
    # data files and the PDF download.
    disposition = "inline" if name.endswith(".html") else "attachment"
    response["Content-Disposition"] = f'{disposition}; filename="{filename}"'
    return response
