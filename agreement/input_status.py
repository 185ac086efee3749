"""Where the machine scores a report reads stand: per judge and per automatic metric, how
many of the study's items are done, how many calls are pending or failed. Read before a
report is computed (to ask for confirmation when something is incomplete), stored with the
snapshot (what it was computed on) and shown live on the report page."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from django.db.models import Count, Q

from annotation.models import Item, RatingStudy
from jury.models import JudgeCall, JudgeScore, MetricScore

FAILED = JudgeCall.FAILED_STATUSES


def input_status(*, study: RatingStudy) -> dict[str, Any]:
    """``{"n_items", "n_items_with_reference", "judges": [...], "metrics": [...],
    "incomplete": bool, "missing": [text, ...]}``. A judge entry: items with a valid score
    (done) of all items (total), calls pending and failed; a metric entry: items scored of
    the items with a reference (a metric needs one). Incomplete: a call still pending, a
    judge that scored some items but not all, a metric that scored fewer items than have a
    reference. Four queries."""
    items = Item.objects.filter(study=study)
    n_items = items.count()
    n_ref = items.exclude(reference_text="").count()
    calls = (
        JudgeCall.objects.filter(item__study=study)
        .values("judge__name")
        .annotate(
            pending=Count("id", filter=Q(status=JudgeCall.Status.PENDING)),
            failed=Count("id", filter=Q(status__in=FAILED)),
        )
    )
    by_judge: dict[str, dict[str, int]] = defaultdict(lambda: {"pending": 0, "failed": 0})
    for row in calls:
        by_judge[row["judge__name"]].update(pending=row["pending"], failed=row["failed"])
    done = (
        JudgeScore.objects.filter(item__study=study, is_valid=True, value__isnull=False)
        .values("judge__name")
        .annotate(n=Count("item", distinct=True))
    )
    for row in done:
        by_judge[row["judge__name"]]["done"] = row["n"]
    judges = [
        {"judge": name, "done": c.get("done", 0), "total": n_items, **c}
        for name, c in sorted(by_judge.items())
    ]
    metrics = [
        {"metric": row["metric"], "done": row["n"], "total": n_ref}
        for row in MetricScore.objects.filter(item__study=study)
        .values("metric")
        .annotate(n=Count("item", distinct=True))
        .order_by("metric")
    ]
    missing = [
        f"judge {j['judge']}: {j['done']} of {j['total']} items scored, {j['pending']} call(s) "
        "pending"
        for j in judges
        if j["pending"] or j["done"] < j["total"]
    ]
    missing += [
        f"metric {m['metric']}: {m['done']} of {m['total']} items with a reference scored"
        for m in metrics
        if m["done"] < m["total"]
    ]
    return {
        "n_items": n_items,
        "n_items_with_reference": n_ref,
        "judges": judges,
        "metrics": metrics,
        "incomplete": bool(missing),
        "missing": missing,
    }


def incomplete_message(status: dict[str, Any], *, how_to_confirm: str) -> str:
    """Why computing now needs a confirmation: what is not finished, and how to go on."""
    return (
        "Judge calls or metrics are incomplete ("
        + "; ".join(status["missing"])
        + f"). {how_to_confirm} to compute on the scores as they are; the report will state "
        "what it was computed on."
    )
