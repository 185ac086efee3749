"""Writes for the jury: judges, prompt templates, runs (start, resume, cancel)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from celery import current_app
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Max, Q, QuerySet
from django.utils import timezone

from annotation import audit
from annotation.models import Item, RatingStudy
from delphi.models import TaxonomyNode
from jury import limits
from jury.errors import JuryError
from jury.models import Judge, JudgeCall, JudgeScore, JuryRun, PromptTemplate
from jury.prompts import DEFAULT_BODY, DEFAULT_SYSTEM, prompt_hash, render_prompt, validate_template
from jury.providers.base import CriterionSpec
from medhelm_site.common import task_names

DEFAULT_TEMPLATE_NAME = "medhelm-default"
# Statuses a resume tries again: the provider never gave an answer. An invalid verdict or a
# refusal is an answer (at temperature 0 the same request gives it again). So is a reply cut
# at max_tokens: the same request is cut the same way again, so a truncated call is sent again
# only once its judge's request has changed (max_tokens raised: _truncated_to_resend).
RETRIED_ON_RESUME = (JudgeCall.Status.PROVIDER_ERROR, JudgeCall.Status.TIMEOUT)


def ensure_default_prompt_template() -> PromptTemplate:
    """The shared MedHELM default template (version 1), created on first use."""
    template, _ = PromptTemplate.objects.get_or_create(
        name=DEFAULT_TEMPLATE_NAME,
        version=1,
        defaults={"system_text": DEFAULT_SYSTEM, "body": DEFAULT_BODY},
    )
    return template


@transaction.atomic
def create_prompt_version(
    *,
    name: str,
    body: str,
    system_text: str,
    study: RatingStudy | None,
    actor: AbstractBaseUser | None,
) -> PromptTemplate:
    """A new version of a template: versions are never edited, so every stored call still
    points at the exact template that produced its prompt."""
    validate_template(body)
    latest = PromptTemplate.objects.filter(name=name).aggregate(v=Max("version"))["v"] or 0
    template = PromptTemplate.objects.create(
        name=name,
        version=latest + 1,
        study=study,
        system_text=system_text,
        body=body,
        created_by=actor,
    )
    if study is not None:
        audit.record(
            actor=actor,
            action="prompt.version",
            target=template,
            study=study,
            after={"name": name, "version": template.version},
        )
    return template


def criteria_specs(*, study: RatingStudy) -> tuple[CriterionSpec, ...]:
    """The study's rubric criteria as the providers and the prompt see them."""
    return tuple(CriterionSpec.of(c) for c in study.criteria.all())


def items_for_run(*, study: RatingStudy, filters: Mapping[str, Any]) -> QuerySet[Item]:
    """The study's items narrowed by a taxonomy node (and everything under it), model names
    and item ids."""
    unknown = set(filters) - {"taxonomy_node", "models", "item_ids"}
    if unknown:
        raise JuryError(
            f"unknown filters {sorted(unknown)}; use taxonomy_node, models, item_ids",
            field="filters",
        )
    items = Item.objects.filter(study=study)
    node_id = filters.get("taxonomy_node")
    if node_id:
        node = TaxonomyNode.objects.filter(pk=node_id).first()
        if node is None:
            raise JuryError(f"no taxonomy node {node_id}", field="taxonomy_node")
        items = items.filter(
            Q(taxonomy_node=node)
            | Q(taxonomy_node__parent=node)
            | Q(taxonomy_node__parent__parent=node)
        )
    if filters.get("models"):
        items = items.filter(model_name__in=list(filters["models"]))
    if filters.get("item_ids"):
        items = items.filter(pk__in=list(filters["item_ids"]))
    return items


# Calls per Celery task when the limits live in Redis. A chunk runs its calls concurrently
# on the worker's event loop (jury.execution.execute_calls): large enough that a worker
# process keeps every judge's slots busy with a few tasks, and that per-task overhead (the
# broker, one load query, the cache lookup) is spread over many calls; small enough that
# the calls spread over the worker processes.
CALLS_PER_TASK = 48


def dispatch_calls(call_ids: Sequence[int]) -> None:
    """Send calls to the workers: in chunks when the limits live in Redis, else one by one.
    Each call notes when it was sent (the sweep sends again what no worker took since)."""
    ids = list(call_ids)
    now = timezone.now()
    for start in range(0, len(ids), 2000):
        JudgeCall.objects.filter(pk__in=ids[start : start + 2000]).update(dispatched_at=now)
    if limits.backend() == "redis":
        for start in range(0, len(ids), CALLS_PER_TASK):
            current_app.send_task(
                task_names.EXECUTE_CALLS, args=[ids[start : start + CALLS_PER_TASK]]
            )
        return
    # The database limiter polls a locked row per attempt: one task per call, as many in
    # flight as the workers have processes or threads.
    for call_id in ids:
        current_app.send_task(task_names.EXECUTE_CALL, args=[call_id])


def _callable_judges(judges: Iterable[Judge]) -> list[Judge]:
    """The judges as a list, or JuryError when there are none or one cannot be called."""
    judges = list(judges)
    if not judges:
        raise JuryError("choose at least one judge", field="judges")
    inactive = [j.name for j in judges if not j.is_active or j.provider == Judge.Provider.IMPORTED]
    if inactive:
        raise JuryError(f"these judges cannot be called: {inactive}", field="judges")
    return judges


def _calls(
    *, run: JuryRun, judges: Sequence[Judge], items: Sequence[Item], template: PromptTemplate
) -> list[JudgeCall]:
    """One unsaved call per (item, judge): the prompt rendered once per item, the request
    hashed per judge (the hash is what the cache matches on)."""
    criteria = criteria_specs(study=run.study)
    calls = []
    for item in items:
        prompt = render_prompt(
            body=template.body,
            question=item.input_text,
            response=item.output_text,
            gold_response=item.reference_text,
            criteria=criteria,
        )
        for judge in judges:
            request_hash = prompt_hash(
                provider=judge.provider,
                model_id=judge.model_id,
                params=judge.params,
                system=template.system_text,
                prompt=prompt,
            )
            calls.append(
                JudgeCall(
                    run=run,
                    judge=judge,
                    item=item,
                    system_text=template.system_text,
                    prompt_text=prompt,
                    prompt_hash=request_hash,
                )
            )
    return calls


@transaction.atomic
def start_run(
    *,
    study: RatingStudy,
    judges: Iterable[Judge],
    actor: AbstractBaseUser | None,
    template: PromptTemplate | None = None,
    filters: Mapping[str, Any] | None = None,
    dispatch: bool = True,
) -> JuryRun:
    """Create a run with one call per (judge, item), its exact prompt rendered and hashed, and
    send the calls to the workers once the transaction commits."""
    judges = _callable_judges(judges)
    template = template or ensure_default_prompt_template()
    filters = dict(filters or {})
    items = list(items_for_run(study=study, filters=filters).order_by("pk"))
    if not items:
        raise JuryError("no item of the study matches", field="filters")
    run = JuryRun.objects.create(
        study=study, prompt_template=template, filters=filters, created_by=actor
    )
    run.judges.set(judges)
    for judge in judges:
        limits.ensure_limiter(judge)
    calls = _calls(run=run, judges=judges, items=items, template=template)
    JudgeCall.objects.bulk_create(calls, batch_size=2000)
    audit.record(
        actor=actor,
        action="jury.start",
        target=run,
        study=study,
        after={
            "judges": [j.name for j in judges],
            "items": len(items),
            "template": str(template),
            "filters": filters,
        },
    )
    if dispatch:
        ids = list(run.calls.values_list("pk", flat=True))
        transaction.on_commit(lambda: dispatch_calls(ids))
    return run


def _truncated_to_resend(run: JuryRun) -> list[JudgeCall]:
    """The run's truncated calls whose judge would now send another request (its params
    changed since, e.g. max_tokens raised), with the hash of that request: the call will
    hold its answer, and the cache must find it under what was asked."""
    resend = []
    for call in run.calls.filter(status=JudgeCall.Status.TRUNCATED).select_related("judge"):
        current = prompt_hash(
            provider=call.judge.provider,
            model_id=call.judge.model_id,
            params=call.judge.params,
            system=call.system_text,
            prompt=call.prompt_text,
        )
        if current != call.prompt_hash:
            call.prompt_hash, call.status = current, JudgeCall.Status.PENDING
            resend.append(call)
    return resend


@transaction.atomic
def resume_run(*, run: JuryRun, actor: AbstractBaseUser | None, dispatch: bool = True) -> int:
    """Score what is missing or failed: calls still pending (a killed worker, a cancel),
    calls that ended in a provider error or timeout, and truncated calls whose judge's
    request has changed. Their attempts so far stay in their history (JudgeAttempt), and
    their error until they end again. Returns how many were sent again."""
    run = JuryRun.objects.select_for_update().get(pk=run.pk)
    retried = JudgeCall.objects.filter(run=run, status__in=RETRIED_ON_RESUME)
    retried.update(status=JudgeCall.Status.PENDING)
    resend = _truncated_to_resend(run)
    JudgeCall.objects.bulk_update(resend, ["prompt_hash", "status"])
    # The cut verdict's scores (none valid) give way to the new answer's; its attempt row
    # keeps why it was cut.
    JudgeScore.objects.filter(call__in=resend).delete()
    pending_calls = run.calls.filter(status=JudgeCall.Status.PENDING)
    pending_calls.update(sweeps=0)  # a resume gives the sweep its full count again
    pending = list(pending_calls.values_list("pk", flat=True))
    # A pending call's stale lease (its worker died) must not block it.
    limits.forget_stale(call_ids=pending)
    run.cancel_requested = False
    run.status = JuryRun.Status.RUNNING if pending else JuryRun.Status.FINISHED
    run.finished_at = None if pending else run.finished_at
    run.save(update_fields=["cancel_requested", "status", "finished_at"])
    audit.record(
        actor=actor,
        action="jury.resume",
        target=run,
        study=run.study,
        after={"calls": len(pending)},
    )
    if dispatch and pending:
        transaction.on_commit(lambda: dispatch_calls(pending))
    return len(pending)


@transaction.atomic
def cancel_run(*, run: JuryRun, actor: AbstractBaseUser | None) -> JuryRun:
    """Stop a run: calls not yet started stay pending (a resume picks them up); calls in
    flight finish and are kept."""
    run = JuryRun.objects.select_for_update().get(pk=run.pk)
    if run.status in (JuryRun.Status.FINISHED, JuryRun.Status.CANCELLED):
        return run
    run.cancel_requested = True
    run.status = JuryRun.Status.CANCELLED
    run.save(update_fields=["cancel_requested", "status"])
    audit.record(actor=actor, action="jury.cancel", target=run, study=run.study)
    return run
