"""A study's runs: one by id, the latest with their progress, and what a new run may be
narrowed to (the study's evaluated models and taxonomy nodes)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Count

from annotation.models import RatingStudy
from delphi.models import TaxonomyNode
from jury.models import JuryRun
from jury.selectors.progress import RunProgress, run_progress

RECENT_RUNS = 30


def study_run(*, study: RatingStudy, run_id: int) -> JuryRun | None:
    """The study's run with this id, or None (a run of another study is not found)."""
    return JuryRun.objects.filter(study=study, pk=run_id).first()


def recent_runs(*, study: RatingStudy) -> list[tuple[JuryRun, RunProgress]]:
    """The study's latest runs, each with its progress, for the runs page."""
    runs = study.jury_runs.prefetch_related("judges")[:RECENT_RUNS]
    return [(run, run_progress(run=run)) for run in runs]


@dataclass(frozen=True)
class FilterChoices:
    """What a run may be narrowed to: the study's evaluated models and the taxonomy nodes its
    items sit under (with their ancestors), each with its item count."""

    models: list[tuple[str, int]]
    nodes: list[tuple[int, str, int]]  # (id, "Category / Subcategory / Task", items)


def run_filter_choices(*, study: RatingStudy) -> FilterChoices:
    models = list(
        study.items.values_list("model_name").annotate(n=Count("id")).order_by("model_name")
    )
    per_node = dict(
        study.items.filter(taxonomy_node__isnull=False)
        .values_list("taxonomy_node")
        .annotate(n=Count("id"))
        .values_list("taxonomy_node", "n")
    )
    known: dict[int, TaxonomyNode] = {}
    wanted = set(per_node)
    while wanted - set(known):
        for node in TaxonomyNode.objects.filter(pk__in=wanted - set(known)):
            known[node.pk] = node
            if node.parent_id is not None:
                wanted.add(node.parent_id)
    counts: dict[int, int] = defaultdict(int)
    for node_id, n in per_node.items():
        node: TaxonomyNode | None = known[node_id]
        while node is not None:  # an item counts for its node and every node above it
            counts[node.pk] += n
            node = known.get(node.parent_id) if node.parent_id is not None else None

    def path(node: TaxonomyNode) -> list[TaxonomyNode]:
        return (path(known[node.parent_id]) if node.parent_id is not None else []) + [node]

    rows = [(path(node), node) for node in known.values()]
    rows.sort(key=lambda r: [(n.position, n.pk) for n in r[0]])
    nodes = [(node.pk, " / ".join(n.name for n in p), counts[node.pk]) for p, node in rows]
    return FilterChoices(models=models, nodes=nodes)
