"""The MedHELM-sized study of bench/bench_reports.py, seeded in a subprocess with the site's
settings: 1,000 cases x 3 models in 5 categories and 10 benchmarks, every assignment rated
(bulk), 3 judges with a verdict on every item, ROUGE-L and BERTScore on every item."""

from __future__ import annotations

import random
import time
from typing import Any

from _support import django_setup

MODELS = ("model-a", "model-b", "model-c")
#: Each model's quality offset on the 1-5 scale, so that the leaderboard has an order.
MODEL_OFFSET = {"model-a": 0.4, "model-b": 0.0, "model-c": -0.4}
CATEGORIES = (
    "Clinical decision support",
    "Clinical note generation",
    "Patient communication and education",
    "Medical research assistance",
    "Administration and workflow",
)
BENCHMARKS_PER_CATEGORY = 2
JUDGES = (("judge-gpt", "openai"), ("judge-claude", "anthropic"), ("judge-gemini", "openai"))


def clip(x: float) -> int:
    return min(5, max(1, round(x)))


def session_for(user: Any) -> str:
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY
    from django.contrib.sessions.backends.db import SessionStore

    s = SessionStore()
    s[SESSION_KEY] = str(user.pk)
    s[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
    s[HASH_SESSION_KEY] = user.get_session_auth_hash()
    s.create()
    return s.session_key


def seed_items(study: Any, coordinator: Any, cases: int, rng: random.Random) -> dict[int, float]:
    """cases x 3 models, in 5 categories and 10 benchmarks; item id -> its true quality."""
    from ratingbench.seeding import case_texts

    from annotation import services
    from annotation.models import Item
    from delphi.models import TaxonomyNode, TaxonomyVersion

    # one version per study: the suite's small version seeds several in one database
    version = TaxonomyVersion.objects.create(name=f"bench: MedHELM categories, study {study.pk}")
    nodes = [
        TaxonomyNode.objects.create(version=version, kind="category", name=name)
        for name in CATEGORIES
    ]
    n_benchmarks = len(CATEGORIES) * BENCHMARKS_PER_CATEGORY
    rows, quality = [], {}
    for case in range(cases):
        input_text, reference, _ = case_texts(case, rng)
        case_quality = rng.gauss(3.0, 0.8)
        bench_no = case % n_benchmarks
        for model in MODELS:
            _, _, output = case_texts(case, rng)
            ext = f"case-{case:05d}"
            quality[(ext, model)] = case_quality + MODEL_OFFSET[model]
            rows.append(
                services.ItemRow(
                    external_id=ext,
                    input_text=input_text,
                    reference_text=reference,
                    output_text=output,
                    model_name=model,
                    benchmark=f"bench-{bench_no:02d}",
                    taxonomy_node_id=nodes[bench_no // BENCHMARKS_PER_CATEGORY].pk,
                )
            )
    services.create_items(study=study, rows=rows, actor=coordinator)
    return {
        pk: quality[(ext, model)]
        for pk, ext, model in Item.objects.filter(study=study).values_list(
            "pk", "external_id", "model_name"
        )
    }


def seed_ratings(study: Any, quality: dict[int, float], rng: random.Random) -> int:
    """Every assignment submitted, one rating per criterion (bulk)."""
    from django.utils import timezone

    from annotation.models import Assignment, Rating

    now = timezone.now()
    criteria = list(study.criteria.order_by("position", "pk"))
    assignments = list(Assignment.objects.filter(study=study).values_list("pk", "item_id"))
    bias: dict[int, float] = {}
    ratings = []
    for pk, item_id in assignments:
        b = bias.setdefault(pk % 97, rng.gauss(0, 0.3))
        for n, criterion in enumerate(criteria):
            v = clip(quality[item_id] + b + 0.1 * n + rng.gauss(0, 0.7))
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
    Rating.objects.bulk_create(ratings, batch_size=2000)
    Assignment.objects.filter(study=study).update(
        status=Assignment.Status.SUBMITTED,
        started_at=now,
        first_submitted_at=now,
        submitted_at=now,
        time_spent_seconds=60,
    )
    return len(ratings)


def seed_jury(study: Any, coordinator: Any, quality: dict[int, float], rng: random.Random) -> int:
    """3 judges, one finished call each per item with a verdict on every criterion (bulk)."""
    from decimal import Decimal

    from django.utils import timezone

    from jury.models import Judge, JudgeCall, JudgeScore, JuryRun, PromptTemplate

    now = timezone.now()
    criteria = list(study.criteria.order_by("position", "pk"))
    template = PromptTemplate.objects.create(
        name=f"bench {study.pk}", study=study, body="Rate {{ output }}", created_by=coordinator
    )
    run = JuryRun.objects.create(
        study=study,
        prompt_template=template,
        status=JuryRun.Status.FINISHED,
        created_by=coordinator,
        started_at=now,
        finished_at=now,
    )
    # get_or_create: the suite's small version (tests/support/report_study.py) seeds several
    # studies in one database, and judges are site-wide
    judges = [
        Judge.objects.get_or_create(
            name=name,
            defaults={
                "provider": provider,
                "model_id": f"{name}-model",
                "price_input_per_mtok": Decimal("2.5"),
                "price_output_per_mtok": Decimal("10"),
            },
        )[0]
        for name, provider in JUDGES
    ]
    calls = JudgeCall.objects.bulk_create(
        [
            JudgeCall(
                run=run,
                judge=judge,
                item_id=item_id,
                prompt_hash=f"{judge.pk:04d}{item_id:060d}",
                prompt_text="(bench prompt)",
                status=JudgeCall.Status.OK,
                raw_output="{}",
                input_tokens=1800,
                output_tokens=220,
                cost=Decimal("0.00670000"),
                latency_ms=900,
                attempts=1,
                finished_at=now,
            )
            for judge in judges
            for item_id in quality
        ],
        batch_size=2000,
    )
    scores = []
    for call in calls:
        bias = 0.2 * (call.judge_id % 3 - 1)
        for criterion in criteria:
            scores.append(
                JudgeScore(
                    item_id=call.item_id,
                    judge_id=call.judge_id,
                    criterion=criterion,
                    call=call,
                    value=clip(quality[call.item_id] + bias + rng.gauss(0, 0.6)),
                    explanation="Accurate and complete; minor omissions.",
                )
            )
    JudgeScore.objects.bulk_create(scores, batch_size=2000)
    return len(scores)


def seed_metrics(quality: dict[int, float], rng: random.Random) -> int:
    from jury.models import MetricScore

    rows = []
    for item_id, q in quality.items():
        rows.append(
            MetricScore(
                item_id=item_id,
                metric=MetricScore.Metric.ROUGE_L_F1,
                value=min(1.0, max(0.0, 0.1 + 0.05 * q + rng.gauss(0, 0.04))),
            )
        )
        rows.append(
            MetricScore(
                item_id=item_id,
                metric=MetricScore.Metric.BERTSCORE_F1,
                value=min(1.0, max(0.0, 0.78 + 0.02 * q + rng.gauss(0, 0.015))),
                scorer_model="distilbert-base-uncased",
                scorer_layer=5,
            )
        )
    MetricScore.objects.bulk_create(rows, batch_size=2000)
    return len(rows)


def internal_seed(params: dict[str, Any]) -> dict[str, Any]:
    """The study, seeded from params["seed"]; the coordinator's session and step times."""
    django_setup()
    from ratingbench.seeding import seed_study, seed_users

    from annotation import services
    from annotation.models import Assignment

    rng = random.Random(params["seed"])
    timings: dict[str, float] = {}
    t0 = time.perf_counter()
    coordinator, users, _tokens, _sessions = seed_users(params["clinicians"])
    study = seed_study(coordinator, users, k=2)
    study.name = "bench: MedHELM-sized report"
    study.save(update_fields=["name"])
    timings["users, study, members"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    quality = seed_items(study, coordinator, params["cases"], rng)
    timings["create_items"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    services.assign_items(study=study, actor=coordinator, seed=params["seed"])
    timings["assign_items"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    n_ratings = seed_ratings(study, quality, rng)
    timings["ratings (bulk)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    n_verdicts = seed_jury(study, coordinator, quality, rng)
    timings["judge calls and scores (bulk)"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    n_metrics = seed_metrics(quality, rng)
    timings["metric scores (bulk)"] = time.perf_counter() - t0
    return {
        "study_id": study.pk,
        "coordinator_id": coordinator.pk,
        "session": session_for(coordinator),
        "items": len(quality),
        "assignments": Assignment.objects.filter(study=study).count(),
        "ratings": n_ratings,
        "judge_scores": n_verdicts,
        "metric_scores": n_metrics,
        "timings": timings,
    }
