"""Writes for the automatic metrics: score a study's items with ROUGE-L and BERTScore.

Each metric is a machine rater, keyed by (item, metric, scorer_model): rouge-score's version
for ROUGE-L, the model's name (plus the layer when not the model's default) for BERTScore.
Re-running skips what that scorer already scored, so the work is idempotent and a killed run
resumes where it stopped; force=True computes everything again and swaps the old rows for the
new ones in one transaction. An item without a reference is skipped and counted, never
scored as 0: there is nothing to compare its output with.

Items are read and scored in batches (keyset pagination on the primary key), so a study of
10,000 items never has more than one batch of texts in memory.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from celery import current_app
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation import audit
from annotation.models import Item, RatingStudy
from jury import metrics as m
from jury.errors import JuryError
from jury.models import MetricScore
from medhelm_site.common import task_names

ALL_METRICS: tuple[str, ...] = tuple(MetricScore.Metric.values)
DEFAULT_BATCH_SIZE = 256
WRITE_CHUNK = 500  # rows per INSERT / ids per DELETE: under SQLite's variable limit


@dataclass
class MetricCounts:
    metric: str
    scorer_model: str
    layer: int | None
    scored: int = 0
    skipped_no_reference: int = 0
    already_scored: int = 0
    replaced: int = 0  # force=True: old rows swapped for new ones (included in scored)
    truncated: int = 0  # BERTScore: pairs cut at the model's maximum length
    seconds: float = 0.0


@dataclass
class MetricReport:
    study_id: int
    items: int
    force: bool
    metrics: dict[str, MetricCounts] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "study": self.study_id,
            "items": self.items,
            "force": self.force,
            "metrics": {name: asdict(c) for name, c in self.metrics.items()},
        }

    def lines(self) -> list[str]:
        out = [f"Study {self.study_id}: {self.items} items{' (force)' if self.force else ''}."]
        for c in self.metrics.values():
            layer = f", layer {c.layer}" if c.layer is not None else ""
            extra = f", {c.replaced} replaced" if self.force else ""
            if c.truncated:
                extra += f", {c.truncated} truncated at {m.MAX_TOKENS} tokens"
            out.append(
                f"  {c.metric} [{c.scorer_model}{layer}]: {c.scored} scored, "
                f"{c.already_scored} already scored, {c.skipped_no_reference} without "
                f"reference{extra} ({c.seconds:.1f}s)"
            )
        return out


@dataclass(frozen=True)
class _Scorer:
    """One metric, ready to score: its stored name, layer and params, and how to score."""

    metric: str
    scorer_model: str
    layer: int | None
    params: dict[str, Any]
    model_dir: Path | None = None

    def score(self, outputs: list[str], references: list[str]) -> tuple[list[float], int]:
        if self.metric == MetricScore.Metric.ROUGE_L_F1:
            return m.rouge_l_f1(outputs, references), 0
        result = m.bertscore_f1(
            outputs, references, model_dir=self.model_dir, num_layers=self.layer
        )
        return result.values, result.truncated


def metric_names(metrics: Sequence[str]) -> list[str]:
    """The metrics asked for, each once, in order; JuryError (field "metrics") when the list
    is empty or names an unknown metric."""
    names = list(dict.fromkeys(metrics))
    unknown = [n for n in names if n not in ALL_METRICS]
    if not names:
        raise JuryError(f"no metric chosen; choose from {', '.join(ALL_METRICS)}", field="metrics")
    if unknown:
        raise JuryError(f"unknown metrics {unknown}; choose from {ALL_METRICS}", field="metrics")
    return names


def _scorers(
    metrics: Sequence[str], model_dir: Path | str | None, layer: int | None
) -> list[_Scorer]:
    """Check every metric before any work: an unknown name is a JuryError; a missing
    package or model raises MetricUnavailable / LocalModelMissing with the pip line."""
    out = []
    for name in metric_names(metrics):
        if name == MetricScore.Metric.ROUGE_L_F1:
            m.rouge_l_f1(["check"], ["check"])  # raises MetricUnavailable without rouge-score
            out.append(_Scorer(name, m.rouge_scorer_name(), None, m.rouge_params()))
        else:
            loaded = m.get_bertscorer(model_dir, layer)  # loads once per process
            out.append(
                _Scorer(
                    name,
                    m.bertscore_scorer_name(loaded.model_path, loaded.layer),
                    loaded.layer,
                    dict(loaded.params),
                    loaded.model_path,
                )
            )
    return out


def _batches(items: Any, size: int) -> Iterator[list[tuple[int, str, str]]]:
    last = 0
    while True:
        batch = list(
            items.filter(pk__gt=last)
            .order_by("pk")
            .values_list("pk", "reference_text", "output_text")[:size]
        )
        if not batch:
            return
        yield batch
        last = batch[-1][0]


def _chunks(seq: Sequence[Any], size: int = WRITE_CHUNK) -> Iterator[Sequence[Any]]:
    for i in range(0, len(seq), size):
        yield seq[i : i + size]


def _rows(scorer: _Scorer, ids: Sequence[int], values: Sequence[float]) -> list[MetricScore]:
    return [
        MetricScore(
            item_id=pk,
            metric=scorer.metric,
            value=value,
            scorer_model=scorer.scorer_model,
            scorer_layer=scorer.layer,
            params=scorer.params,
        )
        for pk, value in zip(ids, values, strict=True)
    ]


# Scores computed under force=True, kept until the swap at the end: metric -> (ids, values).
_Pending = dict[str, tuple[list[int], list[float]]]


def _already_scored(scorer: _Scorer, ids: Sequence[int]) -> set[int]:
    return set(
        MetricScore.objects.filter(
            metric=scorer.metric, scorer_model=scorer.scorer_model, item_id__in=list(ids)
        ).values_list("item_id", flat=True)
    )


def _score_batch(
    batch: Sequence[tuple[int, str, str]],
    *,
    scorers: Sequence[_Scorer],
    counts: dict[str, MetricCounts],
    force: bool,
    pending: _Pending,
) -> None:
    """Score one batch with every scorer: without force, write the new rows now and skip
    what the scorer already scored; with force, keep every value for the final swap."""
    with_reference = [(pk, ref, out) for pk, ref, out in batch if ref.strip()]
    for s in scorers:
        c = counts[s.metric]
        c.skipped_no_reference += len(batch) - len(with_reference)
        todo = with_reference
        if not force:
            done = _already_scored(s, [pk for pk, _, _ in with_reference])
            c.already_scored += len(done)
            todo = [row for row in with_reference if row[0] not in done]
        if not todo:
            continue
        started = time.perf_counter()
        values, truncated = s.score([out for _, _, out in todo], [ref for _, ref, _ in todo])
        c.seconds += time.perf_counter() - started
        c.truncated += truncated
        c.scored += len(todo)
        ids = [pk for pk, _, _ in todo]
        if force:
            pending[s.metric][0].extend(ids)
            pending[s.metric][1].extend(values)
        else:
            # ignore_conflicts: a second delivery of the same task racing this one inserts
            # the same (item, metric, scorer) rows; the first write wins, nothing fails.
            MetricScore.objects.bulk_create(
                _rows(s, ids, values), batch_size=WRITE_CHUNK, ignore_conflicts=True
            )


def _swap(scorers: Sequence[_Scorer], counts: dict[str, MetricCounts], pending: _Pending) -> None:
    """force=True: delete each scorer's old rows of the scored items, insert the new ones."""
    for s in scorers:
        ids, values = pending[s.metric]
        for chunk in _chunks(ids):
            deleted, _ = MetricScore.objects.filter(
                metric=s.metric, scorer_model=s.scorer_model, item_id__in=chunk
            ).delete()
            counts[s.metric].replaced += deleted
        MetricScore.objects.bulk_create(_rows(s, ids, values), batch_size=WRITE_CHUNK)


def _audit(
    *,
    study: RatingStudy,
    actor: AbstractBaseUser | None,
    report: MetricReport,
    scorers: Sequence[_Scorer],
    item_ids: Sequence[int] | None,
) -> None:
    counts = report.metrics
    audit.record(
        actor=actor,
        action="metrics.compute",
        target=study,
        study=study,
        before={"replaced": {k: c.replaced for k, c in counts.items()}} if report.force else None,
        after={
            **report.as_dict(),
            "item_ids": list(item_ids)[:1000] if item_ids is not None else None,
            "params": {s.metric: s.params for s in scorers},
        },
    )


def compute_metrics(
    *,
    study: RatingStudy,
    metrics: Sequence[str] = ("rouge_l_f1", "bertscore_f1"),
    actor: AbstractBaseUser | None,
    item_ids: Sequence[int] | None = None,
    model_dir: Path | str | None = None,
    bertscore_layer: int | None = None,
    force: bool = False,
    batch_size: int = DEFAULT_BATCH_SIZE,
) -> MetricReport:
    """Score the study's items (or those of item_ids in the study) with each metric.

    Without force, each batch is written as soon as it is scored (its own short transaction)
    and items the scorer already scored are skipped. With force, every item with a reference
    is scored again and the new rows replace the old ones in one transaction at the end (the
    scores, not the texts, are kept until then: a few floats per item).
    """
    if batch_size < 1:
        raise ValueError("batch_size must be at least 1")
    scorers = _scorers(metrics, model_dir, bertscore_layer)
    items = Item.objects.filter(study=study)
    if item_ids is not None:
        items = items.filter(pk__in=list(item_ids))
    report = MetricReport(study_id=study.pk, items=items.count(), force=force)
    counts = {s.metric: MetricCounts(s.metric, s.scorer_model, s.layer) for s in scorers}
    report.metrics = counts
    pending: _Pending = {s.metric: ([], []) for s in scorers}
    for batch in _batches(items, batch_size):
        _score_batch(batch, scorers=scorers, counts=counts, force=force, pending=pending)
    with transaction.atomic():
        if force:
            _swap(scorers, counts, pending)
        if any(c.scored for c in counts.values()):
            _audit(study=study, actor=actor, report=report, scorers=scorers, item_ids=item_ids)
    return report


def enqueue_compute_metrics(
    *,
    study: RatingStudy,
    metrics: Sequence[str] = ALL_METRICS,
    item_ids: Sequence[int] | None = None,
) -> None:
    """Send jury.compute_metrics to the workers once the current transaction commits (the
    same pattern as a jury run's calls)."""
    names = metric_names(metrics)
    ids = list(item_ids) if item_ids is not None else None

    def send() -> None:
        current_app.send_task(task_names.COMPUTE_METRICS, args=[study.pk, names, ids])

    transaction.on_commit(send)
