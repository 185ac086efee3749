"""Pages for coordinators (set up, members, import, assignment, lock) and the study dashboard
that coordinators and researchers read."""

from __future__ import annotations

import json
from typing import IO

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import (
    Http404,
    HttpRequest,
    HttpResponse,
    HttpResponseBadRequest,
    StreamingHttpResponse,
)
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt, csrf_protect
from django.views.decorators.http import require_POST

from annotation import imports, selectors, services
from annotation.access import STUDY_READERS, Role, get_study_for_user
from annotation.calibration_stats import MIN_KAPPA_PAIRS
from annotation.errors import AnnotationError
from annotation.forms import CriterionFormSet, ImportForm, MemberForm, StudyForm, criteria_initial
from annotation.models import ImportJob, RatingStudy
from annotation.views.long_imports import LongImportPage, long_import_page
from medhelm_site.common.csv_export import csv_lines
from medhelm_site.common.querying import parse_id
from medhelm_site.domain_errors import add_to_form

RATINGS_PAGE_COLUMNS = (
    "external_id, model (the item), rater (a pseudonym; each becomes an imported member "
    "without login or assignments), criterion (a rubric key), value (on the criterion's "
    "scale; decimals only where the criterion allows them), and optionally comment and the "
    "marks the export writes: attention_check (true/false) with expected_low and "
    "expected_high (the range of the row's criterion that passes), calibration_item "
    "(true/false) with calibration_reference; a mark must agree with this study's own "
    "attention checks and calibration items, and a blank mark states nothing"
)


def _criteria_from(formset) -> list[dict]:
    """Filled-in, not deleted criterion forms, in order."""
    criteria = []
    for f in formset.forms:
        if not f.cleaned_data or f.cleaned_data.get("DELETE"):
            continue
        criteria.append({k: v for k, v in f.cleaned_data.items() if k != "DELETE"})
    return criteria


@login_required
def create_study(request: HttpRequest) -> HttpResponse:
    if not request.user.has_perm("annotation.add_ratingstudy"):
        raise PermissionDenied("You may not create studies; ask a site administrator.")
    template = services.ensure_medhelm_rubric_template()
    if request.method == "POST":
        form = StudyForm(request.POST)
        formset = CriterionFormSet(request.POST, prefix="criteria")
        if form.is_valid() and formset.is_valid():
            try:
                study = services.create_study(
                    created_by=request.user, criteria=_criteria_from(formset), **form.cleaned_data
                )
            except AnnotationError as exc:
                add_to_form(form, exc)
            else:
                messages.success(request, "Study created. Add clinicians and import items next.")
                return redirect("annotation:study", study_id=study.pk)
    else:
        form = StudyForm(initial={"ratings_per_item": 2, "show_reference": True})
        formset = CriterionFormSet(prefix="criteria", initial=criteria_initial(template.criteria))
    return render(
        request, "annotation/study_form.html", {"form": form, "formset": formset, "creating": True}
    )


@login_required
def edit_study(request: HttpRequest, study_id: int) -> HttpResponse:
    study, _ = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=[Role.COORDINATOR]
    )
    current = [{k: getattr(c, k) for k in services.CRITERION_FIELDS} for c in study.criteria.all()]
    if request.method == "POST":
        form = StudyForm(request.POST, instance=study)
        formset = CriterionFormSet(request.POST, prefix="criteria")
        if form.is_valid() and formset.is_valid():
            criteria = _criteria_from(formset)
            changes = {k: v for k, v in form.cleaned_data.items() if k != "taxonomy_version"}
            changes["taxonomy_version_id"] = (
                form.cleaned_data["taxonomy_version"].pk
                if form.cleaned_data["taxonomy_version"]
                else None
            )
            study.refresh_from_db()  # the ModelForm wrote into the instance; the service decides
            try:
                services.update_study(
                    study=study, actor=request.user, changes=changes, criteria=criteria
                )
            except AnnotationError as exc:
                add_to_form(form, exc)
            else:
                messages.success(request, "Study settings saved.")
                return redirect("annotation:study", study_id=study.pk)
    else:
        form = StudyForm(instance=study)
        formset = CriterionFormSet(prefix="criteria", initial=criteria_initial(current))
    return render(
        request,
        "annotation/study_form.html",
        {"form": form, "formset": formset, "study": study, "creating": False},
    )


@login_required
def dashboard_page(request: HttpRequest, study_id: int) -> HttpResponse:
    study, roles = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=STUDY_READERS
    )
    is_coordinator = Role.COORDINATOR in roles
    return render(
        request,
        "annotation/dashboard.html",
        {
            "study": study,
            "is_coordinator": is_coordinator,
            "progress": selectors.study_progress(study=study),
            # with a sample drawn, only its items are dealt: the summary line says how many
            "draw": selectors.current_draw(study=study),
            "clinicians": selectors.progress_by_clinician(study=study),
            "median_seconds": selectors.median_seconds_per_item(study=study),
            "short": selectors.short_of_k(study=study, limit=50),
            "flagged": selectors.flagged_items(study=study),
            "check_results": selectors.check_results(study=study),
            "calibration_results": selectors.calibration_results(study=study),
            "min_kappa_pairs": MIN_KAPPA_PAIRS,
            # The last stored snapshot only: it is computed by a worker, never here.
            "watch": selectors.agreement_watch(study=study),
            "import_jobs": study.import_jobs.all()[:10] if is_coordinator else [],
            "criteria": study.criteria.all(),
        },
    )


@login_required
def item_page(request: HttpRequest, study_id: int, item_id: int) -> HttpResponse:
    """One item as its coordinators see it (model included), its raters and the history of
    its flags; an open flag is resolved here with a note. Coordinators only: a clinician
    never reaches it (403), nor does a researcher."""
    study, _ = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=[Role.COORDINATOR]
    )
    item = selectors.study_item(study=study, item_id=item_id)
    if item is None:
        raise Http404("No such item in this study.")
    status = 200
    error = None
    error_assignment = None
    if request.method == "POST":
        assignment_id = parse_id(request.POST.get("assignment"), field="assignment")
        try:
            services.resolve_flag(
                study=study,
                assignment_id=assignment_id,
                actor=request.user,
                note=request.POST.get("note", ""),
            )
        except AnnotationError as exc:
            status, error, error_assignment = 400, exc.message, assignment_id
        else:
            messages.success(request, "Flag resolved; the rater sees your note in their queue.")
            return redirect("annotation:item", study_id=study.pk, item_id=item.pk)
    return render(
        request,
        "annotation/item.html",
        {
            "study": study,
            "review": selectors.item_review(study=study, item=item),
            "error": error,
            "error_assignment": error_assignment,
            "note": request.POST.get("note", "") if error else "",
        },
        status=status,
    )


@login_required
def members(request: HttpRequest, study_id: int) -> HttpResponse:
    study, _ = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=[Role.COORDINATOR]
    )
    if request.method == "POST" and request.POST.get("action", "add") == "remove":
        return _remove_member(request, study)
    form = MemberForm(request.POST or None)
    if request.method == "POST" and form.is_valid() and _add_member(request, study, form):
        return redirect("annotation:members", study_id=study.pk)
    return render(
        request,
        "annotation/members.html",
        {
            "study": study,
            "form": form,
            "memberships": selectors.study_members(study=study),
            "clashes": selectors.role_clashes(study=study),
        },
    )


def _remove_member(request: HttpRequest, study: RatingStudy) -> HttpResponse:
    membership_id = parse_id(request.POST.get("membership"), field="membership")
    membership = selectors.study_member(study=study, membership_id=membership_id)
    if membership is None:
        raise Http404("No such member.")
    try:
        services.remove_member(
            study=study, user=membership.user, role=membership.role, actor=request.user
        )
    except AnnotationError as exc:
        messages.error(request, exc.message)
    else:
        messages.success(
            request, f"{membership.pseudonym} removed; unstarted work was dealt again."
        )
    return redirect("annotation:members", study_id=study.pk)


def _add_member(request: HttpRequest, study: RatingStudy, form: MemberForm) -> bool:
    """Add the named account in the chosen role; False (errors on the form) if it cannot be."""
    name = form.cleaned_data["username"].strip()
    user = selectors.account_named(name=name)
    if user is None:
        form.add_error("username", f"No account {name!r}. A site administrator creates accounts.")
        return False
    try:
        m = services.add_member(
            study=study, user=user, role=form.cleaned_data["role"], actor=request.user
        )
    except AnnotationError as exc:
        add_to_form(form, exc)
        return False
    messages.success(request, f"{user.get_username()} is {m.role} {m.pseudonym}.")
    return True


@login_required
@csrf_exempt  # the token is checked by _import_page, once the upload limit is in place
def import_items(request: HttpRequest, study_id: int) -> HttpResponse:
    study, _ = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=[Role.COORDINATOR]
    )
    # Before anything reads the body: a file above the limit is then never read in full.
    size_limit = imports.limit_upload_size(request)
    return _import_page(request, study, size_limit)


@csrf_protect
def _import_page(
    request: HttpRequest, study: RatingStudy, size_limit: imports.UploadSizeLimit
) -> HttpResponse:
    job = None
    if request.GET.get("job"):
        job_id = _import_number(request.GET["job"])
        if job_id is None:
            return HttpResponseBadRequest('"job" must be the number of an import of this study.')
        job = ImportJob.objects.filter(study=study, kind=ImportJob.Kind.ITEMS, pk=job_id).first()
        if job is None:
            raise Http404("No such import.")
    status = 200
    form = ImportForm()
    if request.method == "POST":
        files = request.FILES  # the body is parsed here, the upload limit first
        status = 400  # unless the import starts, below
        form = ImportForm(request.POST, files)
        if size_limit.refusal is not None:
            # Reading stopped at the file's start, so the form lacks it: say why instead.
            form.is_valid()
            form.errors.pop("file", None)
            add_to_form(form, size_limit.refusal)
        elif form.is_valid():
            upload = form.cleaned_data["file"]
            try:
                job = imports.start_import(
                    study=study,
                    uploaded_name=upload.name,
                    content=upload,
                    file_format=form.cleaned_data["file_format"],
                    actor=request.user,
                    on_bad_run=form.cleaned_data["on_bad_run"] or ImportJob.OnBadRun.REFUSE,
                    helm_completions=form.cleaned_data["helm_completions"]
                    or ImportJob.Completions.FIRST,
                )
            except AnnotationError as exc:
                add_to_form(form, exc)
            else:
                return redirect(f"{request.path}?job={job.pk}")
    return render(
        request,
        "annotation/import.html",
        {
            "study": study,
            "form": form,
            "job": job,
            "progress": imports.import_progress(job) if job else None,
            # after an import, where the study's items landed (by taxonomy and model)
            "filing": (
                selectors.filing_summary(study=study)
                if job is not None and job.status == ImportJob.Status.SUCCEEDED
                else None
            ),
            "jobs": study.import_jobs.filter(kind=ImportJob.Kind.ITEMS)[:20],
            "max_upload_bytes": imports.max_upload_bytes(),
        },
        status=status,
    )


def _import_number(raw: str) -> int | None:
    """The import number a query string gives (digits, within the id column), or None."""
    if not raw.isascii() or not raw.isdigit() or len(raw) > 18:
        return None
    return int(raw)


@login_required
@require_POST
def assign(request: HttpRequest, study_id: int) -> HttpResponse:
    study, _ = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=[Role.COORDINATOR]
    )
    try:
        created = services.assign_items(study=study, actor=request.user)
    except AnnotationError as exc:  # a locked study, or a design that cannot be built
        messages.error(request, exc.message)
    else:
        messages.success(request, f"Assignments balanced: {created} unstarted assignments dealt.")
    return redirect("annotation:study", study_id=study.pk)


@login_required
@require_POST
def lock(request: HttpRequest, study_id: int) -> HttpResponse:
    study, _ = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=[Role.COORDINATOR]
    )
    choice = request.POST.get("locked")
    if choice not in ("0", "1"):
        # A missing or garbled value must not unlock a study (it used to read as "0").
        return HttpResponseBadRequest('"locked" must be 1 (lock) or 0 (unlock); nothing changed.')
    locked = choice == "1"
    services.set_study_lock(study=study, locked=locked, actor=request.user)
    messages.success(request, "Study locked: ratings are frozen." if locked else "Study unlocked.")
    return redirect("annotation:study", study_id=study.pk)


@login_required
def export_ratings(request: HttpRequest, study_id: int, fmt: str) -> HttpResponse:
    study, _ = get_study_for_user(user=request.user, study_id=study_id, allowed_roles=STUDY_READERS)
    values = request.GET.get("values", "latest")
    if values not in ("latest", "first") or fmt not in ("csv", "json"):
        raise Http404("Unknown export.")
    rows = selectors.rating_export_rows(study=study, values=values)
    filename = f"study-{study.pk}-ratings-{values}.{fmt}"
    if fmt == "json":
        body = json.dumps(
            {
                "study": study.pk,
                "values": values,
                "columns": selectors.EXPORT_COLUMNS,
                "rows": list(rows),
            }
        )
        response = HttpResponse(body, content_type="application/json")
    else:
        response = StreamingHttpResponse(
            csv_lines(selectors.EXPORT_COLUMNS, rows), content_type="text/csv"
        )
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


@login_required
@csrf_exempt  # the token is checked by long_import_page, once the upload limit is in place
def import_ratings(request: HttpRequest, study_id: int) -> HttpResponse:
    """Ratings collected elsewhere, from a long file (annotation.services.rating_imports)."""
    study, _ = get_study_for_user(
        user=request.user, study_id=study_id, allowed_roles=[Role.COORDINATOR]
    )
    size_limit = imports.limit_upload_size(request)
    page = LongImportPage(
        kind="ratings",
        columns=RATINGS_PAGE_COLUMNS,
        export_url=reverse("annotation:export-ratings-long", args=[study.pk]),
    )

    def start(content: IO[bytes], name: str) -> ImportJob:
        return imports.start_long_import(
            study=study,
            kind=ImportJob.Kind.RATINGS,
            uploaded_name=name,
            content=content,
            actor=request.user,
            importer=services.import_ratings,
        )

    return long_import_page(request, study, size_limit, page=page, start=start)


@login_required
def export_ratings_long(request: HttpRequest, study_id: int) -> HttpResponse:
    """The ratings the score table uses, in the long format the ratings import reads."""
    study, _ = get_study_for_user(user=request.user, study_id=study_id, allowed_roles=STUDY_READERS)
    rows = selectors.ratings_long_rows(study=study)
    response = StreamingHttpResponse(
        csv_lines(selectors.LONG_RATING_COLUMNS, rows), content_type="text/csv"
    )
    filename = f"study-{study.pk}-ratings-long.csv"
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response
