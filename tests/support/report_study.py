"""A rated study of the MedHELM bench's shape (bench/bench_reports.py) at a size a test can
afford: items by 3 models in categories and benchmarks, each rated by 2 of the clinicians on
the MedHELM rubric, 3 judges scoring every item on every criterion, ROUGE-L and BERTScore on
every item. Written in bulk, as the bench seeds it."""

from __future__ import annotations

import random

from django.utils import timezone

from annotation.models import Assignment, Item, Rating
from delphi.models import TaxonomyNode, TaxonomyVersion
from jury.models import Judge, JudgeScore, MetricScore
from tests.factories import StudyWithMembers, item_rows, make_study_with_members

MODELS = ("model-a", "model-b", "model-c")
CATEGORIES = ("Clinical decision support", "Patient communication", "Administration")
JUDGES = ("judge-gpt", "judge-claude", "judge-gemini")


def clip(x: float) -> int:
    return min(5, max(1, round(x)))


def medhelm_shaped_study(*, cases: int, n_clinicians: int, seed: int = 16) -> StudyWithMembers:
    """``cases`` x 3 models items, 2 of ``n_clinicians`` per item, every assignment rated."""
    rng = random.Random(seed)
    members = make_study_with_members(n_items=0, n_clinicians=n_clinicians, k=2)
    study = members.study
    from annotation import services

    services.create_items(
        study=study, rows=item_rows(cases, models=MODELS), actor=members.coordinator
    )
    version = TaxonomyVersion.objects.create(name=f"report study {study.pk}")
    nodes = [
        TaxonomyNode.objects.create(version=version, kind="category", name=name)
        for name in CATEGORIES
    ]
    items = list(Item.objects.filter(study=study).order_by("pk"))
    case_quality = [rng.gauss(3.0, 0.8) for _ in range(cases)]
    quality = {}
    for n, item in enumerate(items):
        case = n // len(MODELS)
        item.benchmark = f"bench-{case % 6:02d}"
        item.taxonomy_node = nodes[case % 6 // 2]
        quality[item.pk] = case_quality[case] + 0.4 * (1 - MODELS.index(item.model_name))
    Item.objects.bulk_update(items, ["benchmark", "taxonomy_node"])
    services.assign_items(study=study, actor=members.coordinator, seed=seed)
    _ratings(study, quality, rng)
    _machines(study, quality, rng)
    return members


def _ratings(study, quality: dict[int, float], rng: random.Random) -> None:
    now = timezone.now()
    criteria = list(study.criteria.order_by("position", "pk"))
    ratings = []
    for pk, item_id in Assignment.objects.filter(study=study).values_list("pk", "item_id"):
        bias = rng.gauss(0, 0.3)
        for n, criterion in enumerate(criteria):
            v = clip(quality[item_id] + bias + 0.1 * n + rng.gauss(0, 0.7))
            ratings.append(
                Rating(
                    assignment_id=pk,
                    criterion=criterion,
                    value=v,
                    first_value=v,
                    first_cannot_assess=False,
                    first_submitted_at=now,
                )
            )
    Rating.objects.bulk_create(ratings)
    Assignment.objects.filter(study=study).update(
        status=Assignment.Status.SUBMITTED,
        started_at=now,
        first_submitted_at=now,
        submitted_at=now,
    )


def _machines(study, quality: dict[int, float], rng: random.Random) -> None:
    criteria = list(study.criteria.order_by("position", "pk"))
    judges = [
        Judge.objects.get_or_create(name=name, defaults={"provider": "imported", "model_id": name})[
            0
        ]
        for name in JUDGES
    ]
    JudgeScore.objects.bulk_create(
        JudgeScore(
            item_id=item_id,
            judge=judge,
            criterion=criterion,
            value=clip(q + 0.2 * (n - 1) + rng.gauss(0, 0.6)),
        )
        for item_id, q in quality.items()
        for n, judge in enumerate(judges)
        for criterion in criteria
    )
    MetricScore.objects.bulk_create(
        row
        for item_id, q in quality.items()
        for row in (
            MetricScore(
                item_id=item_id,
                metric=MetricScore.Metric.ROUGE_L_F1,
                value=min(1.0, max(0.0, 0.1 + 0.05 * q + rng.gauss(0, 0.04))),
            ),
            MetricScore(
                item_id=item_id,
                metric=MetricScore.Metric.BERTSCORE_F1,
                value=min(1.0, max(0.0, 0.78 + 0.02 * q + rng.gauss(0, 0.015))),
                scorer_model="distilbert-base-uncased",
                scorer_layer=5,
            ),
        )
    )
