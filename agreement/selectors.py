"""Reads for agreement: the one long score table of a study, its coverage, and call costs.

Everything agreement computes starts from :func:`score_data` (DESIGN.md "One score table"):
columns ``item, criterion, rater, rater_kind, value`` plus the item attributes ``model,
benchmark, category``, built with a fixed number of queries whatever the study's size.

- clinician: submitted ratings; rater = the study pseudonym (never a name or e-mail);
  "cannot assess" answers are left out of the table and counted in the coverage.
- judge: valid judge scores; rater = the judge's name; where a judge scored an item and
  criterion more than once (repeated runs), its latest score (highest id) counts.
- jury: per item and criterion the weight-averaged latest valid scores of the judges
  (the same rule as jury.selectors.jury_item_scores); rater "jury".
- metric: automatic metrics (ROUGE-L, BERTScore); rater = the metric's key, criterion
  "overall" (a metric scores the whole output, not a rubric criterion).

Nothing is dropped silently: the coverage lists items with fewer than 2 clinician ratings,
raters with too few clinician-rated items, cannot-assess answers, invalid judge scores and
judge calls by status.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import Any, Literal

import pandas as pd

from annotation.models import Assignment, Item, Rating, RatingStudy, StudyMembership
from delphi.models import TaxonomyNode, TaxonomyVersion
from jury.models import JudgeCall, JudgeScore, MetricScore

ValueChoice = Literal["latest", "first"]

JURY_RATER = "jury"
METRIC_CRITERION = "overall"
NO_CATEGORY = "(no category)"
NO_BENCHMARK = "(no benchmark)"
TABLE_COLUMNS = (
    "item",
    "criterion",
    "rater",
    "rater_kind",
    "value",
    "model",
    "benchmark",
    "category",
)
CALL_COLUMNS = (
    "item",
    "model",
    "judge",
    "status",
    "cached",
    "input_tokens",
    "output_tokens",
    "cost",
    "price_input_per_mtok",
    "price_output_per_mtok",
    "max_output_tokens",
)
#: The default a judge call uses when the judge's params set no max_tokens (jury.execution).
DEFAULT_MAX_OUTPUT_TOKENS = 1024
FAILED_STATUSES = (
    JudgeCall.Status.INVALID,
    JudgeCall.Status.PROVIDER_ERROR,
    JudgeCall.Status.TIMEOUT,
    JudgeCall.Status.REFUSED,
)


@dataclass(frozen=True)
class ScoreData:
    """The score table of a study and what it leaves out."""

    table: pd.DataFrame  # TABLE_COLUMNS, sorted by item, criterion, rater
    items: pd.DataFrame  # item, external_id, model, benchmark, category (every study item)
    criteria: list[str]  # rubric criterion keys in rubric order
    calls: pd.DataFrame = field(repr=False)  # CALL_COLUMNS, one row per judge call
    coverage: dict[str, Any] = field(default_factory=dict)


def _categories(study: RatingStudy) -> dict[int, str]:
    """Taxonomy node id -> name of its category (walking up parents). One query."""
    versions = TaxonomyVersion.objects.filter(nodes__items__study=study).values("pk")
    nodes = {
        pk: (parent_id, name)
        for pk, parent_id, name in TaxonomyNode.objects.filter(version__in=versions).values_list(
            "pk", "parent_id", "name"
        )
    }
    out: dict[int, str] = {}
    for pk in nodes:
        seen, current = set(), pk
        while nodes[current][0] is not None and current not in seen:
            seen.add(current)
            current = nodes[current][0]
        out[pk] = nodes[current][1]
    return out


def _unique_labels(labels: dict[str, set[str]]) -> dict[tuple[str, str], str]:
    """(kind, label) -> label, prefixed with the kind where two kinds share a label."""
    counts = Counter(label for names in labels.values() for label in names)
    return {
        (kind, label): label if counts[label] == 1 else f"{kind}:{label}"
        for kind, names in labels.items()
        for label in names
    }


def score_data(
    *, study: RatingStudy, values: ValueChoice = "latest", min_rater_items: int = 2
) -> ScoreData:
    """The study's long score table with item attributes, criteria, calls and coverage.

    ``values="first"`` takes each clinician rating as first submitted, "latest" as it stands.
    Always eight queries.
    """
    if values not in ("latest", "first"):
        raise ValueError(f"values must be 'latest' or 'first', got {values!r}")
    categories = _categories(study)
    item_rows = list(
        Item.objects.filter(study=study)
        .order_by("pk")
        .values_list("pk", "external_id", "model_name", "benchmark", "taxonomy_node_id")
    )
    items = pd.DataFrame(
        [
            (pk, ext, model, bench or NO_BENCHMARK, categories.get(node, NO_CATEGORY))
            for pk, ext, model, bench, node in item_rows
        ],
        columns=["item", "external_id", "model", "benchmark", "category"],
    )
    criteria = list(study.criteria.order_by("position", "pk").values_list("key", flat=True))
    pseudonyms = dict(
        StudyMembership.objects.filter(
            study=study, role=StudyMembership.Role.CLINICIAN
        ).values_list("user_id", "pseudonym")
    )

    rows: list[tuple[int, str, str, str, float]] = []
    cannot_assess: Counter[tuple[str, str]] = Counter()
    missing = 0
    first = values == "first"
    for item_id, key, user_id, value, ca, first_value, first_ca in Rating.objects.filter(
        assignment__study=study, assignment__status=Assignment.Status.SUBMITTED
    ).values_list(
        "assignment__item_id",
        "criterion__key",
        "assignment__clinician_id",
        "value",
        "cannot_assess",
        "first_value",
        "first_cannot_assess",
    ):
        rater = pseudonyms.get(user_id) or f"clinician-{user_id}"  # no pseudonym: never a name
        v, unable = (first_value, bool(first_ca)) if first else (value, ca)
        if unable:
            cannot_assess[(rater, key)] += 1
        elif v is None:
            missing += 1
        else:
            rows.append((item_id, key, rater, "clinician", float(v)))

    latest: dict[tuple[int, str, int], tuple[float, float, str]] = {}
    invalid: Counter[str] = Counter()
    for item_id, key, judge_id, name, weight, value, valid in (
        JudgeScore.objects.filter(item__study=study)
        .order_by("pk")
        .values_list(
            "item_id", "criterion__key", "judge_id", "judge__name", "judge__weight", "value",
            "is_valid",
        )
    ):  # fmt: skip
        if valid and value is not None:
            latest[(item_id, key, judge_id)] = (float(value), float(weight), name)
        else:
            invalid[name] += 1
    sums: dict[tuple[int, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    judge_rows = []
    for (item_id, key, _judge), (value, weight, name) in latest.items():
        judge_rows.append((item_id, key, name, value))
        acc = sums[(item_id, key)]
        acc[0] += weight * value
        acc[1] += weight

    metric_rows = list(
        MetricScore.objects.filter(item__study=study)
        .order_by("pk")
        .values_list("item_id", "metric", "scorer_model", "value")
    )
    scorers: dict[str, set[str]] = defaultdict(set)
    for _item, metric, scorer, _value in metric_rows:
        scorers[metric].add(scorer)

    def metric_label(metric: str, scorer: str) -> str:
        return metric if len(scorers[metric]) == 1 else f"{metric}@{scorer or 'default'}"

    labels = _unique_labels(
        {
            "clinician": {r[2] for r in rows},
            "judge": {r[2] for r in judge_rows},
            "jury": {JURY_RATER} if sums else set(),
            "metric": {metric_label(m, s) for _i, m, s, _v in metric_rows},
        }
    )
    records = [(i, c, labels[("clinician", r)], k, v) for i, c, r, k, v in rows]
    records += [(i, c, labels[("judge", r)], "judge", v) for i, c, r, v in judge_rows]
    records += [
        (i, c, labels[("jury", JURY_RATER)], "jury", acc[0] / acc[1])
        for (i, c), acc in sums.items()
    ]
    records += [
        (i, METRIC_CRITERION, labels[("metric", metric_label(m, s))], "metric", float(v))
        for i, m, s, v in metric_rows
    ]
    table = pd.DataFrame(records, columns=["item", "criterion", "rater", "rater_kind", "value"])
    table = table.astype({"item": "int64", "value": "float64"})
    table = table.merge(items[["item", "model", "benchmark", "category"]], on="item", how="left")
    table = table.sort_values(["item", "criterion", "rater"], kind="stable").reset_index(drop=True)
    table = table.loc[:, list(TABLE_COLUMNS)]

    calls = _calls_frame(study, items)
    coverage = _coverage(
        table=table,
        items=items,
        calls=calls,
        cannot_assess=cannot_assess,
        missing=missing,
        invalid=invalid,
        min_rater_items=min_rater_items,
    )
    return ScoreData(table=table, items=items, criteria=criteria, calls=calls, coverage=coverage)


def score_table(*, study: RatingStudy, values: ValueChoice = "latest") -> pd.DataFrame:
    """The long score table (see :func:`score_data`), coverage in ``attrs["coverage"]``."""
    data = score_data(study=study, values=values)
    table = data.table
    table.attrs["coverage"] = data.coverage
    return table


def _calls_frame(study: RatingStudy, items: pd.DataFrame) -> pd.DataFrame:
    """One row per judge call of the study (every run): status, tokens, cost, prices."""
    model_of = dict(zip(items["item"], items["model"], strict=True))
    rows = []
    for item_id, name, status, cached, tin, tout, cost, p_in, p_out, params in (
        JudgeCall.objects.filter(item__study=study)
        .order_by("pk")
        .values_list(
            "item_id", "judge__name", "status", "cached_from_id", "input_tokens",
            "output_tokens", "cost", "judge__price_input_per_mtok",
            "judge__price_output_per_mtok", "judge__params",
        )
    ):  # fmt: skip
        max_out = (params or {}).get("max_tokens", DEFAULT_MAX_OUTPUT_TOKENS)
        rows.append(
            (
                item_id,
                model_of.get(item_id, ""),
                name,
                status,
                cached is not None,
                tin,
                tout,
                None if cost is None else float(cost),
                float(p_in),
                float(p_out),
                int(max_out),
            )
        )
    frame = pd.DataFrame(rows, columns=list(CALL_COLUMNS))
    return frame.astype({"input_tokens": "float64", "output_tokens": "float64", "cost": "float64"})


def _coverage(
    *,
    table: pd.DataFrame,
    items: pd.DataFrame,
    calls: pd.DataFrame,
    cannot_assess: Counter[tuple[str, str]],
    missing: int,
    invalid: Counter[str],
    min_rater_items: int,
) -> dict[str, Any]:
    clin = table.loc[table["rater_kind"] == "clinician"]
    raters_per_item = clin.groupby("item")["rater"].nunique()
    per_item = items.set_index("item").assign(
        n_clinicians=raters_per_item.reindex(items["item"]).fillna(0).astype(int).to_numpy()
    )
    short = per_item.loc[per_item["n_clinicians"] < 2].reset_index()
    rated = set(clin["item"].unique())
    on_rated = table.loc[table["item"].isin(rated)]
    rater_items = on_rated.groupby(["rater", "rater_kind"])["item"].nunique().reset_index()
    few = rater_items.loc[rater_items["item"] < min_rater_items]
    jury_items = set(table.loc[table["rater_kind"] == "jury", "item"])
    by_judge: dict[str, Counter[str]] = defaultdict(Counter)
    for judge, status in zip(calls["judge"], calls["status"], strict=True):
        by_judge[judge][status] += 1
    ca_by_criterion: Counter[str] = Counter()
    ca_by_rater: Counter[str] = Counter()
    for (rater, key), n in cannot_assess.items():
        ca_by_criterion[key] += n
        ca_by_rater[rater] += n
    return {
        "n_items": len(items),
        "n_items_rated": len(rated),
        "min_rater_items": min_rater_items,
        "n_items_short": len(short),
        "items_short": [
            {
                "item": int(r.item),
                "external_id": r.external_id,
                "model": r.model,
                "n_clinicians": int(r.n_clinicians),
            }
            for r in short.itertuples()
        ],
        "raters_few_items": [
            {"rater": r.rater, "rater_kind": r.rater_kind, "n_items": int(r.item)}
            for r in few.itertuples()
        ],
        "cannot_assess": {
            "total": sum(cannot_assess.values()),
            "by_criterion": dict(sorted(ca_by_criterion.items())),
            "by_rater": dict(sorted(ca_by_rater.items())),
        },
        "missing_values": missing,
        "invalid_judge_scores": dict(sorted(invalid.items())),
        "rated_items_without_jury": len(rated - jury_items),
        "judge_calls": [
            {
                "judge": judge,
                "total": sum(counts.values()),
                "failed": sum(counts.get(s, 0) for s in FAILED_STATUSES),
                "by_status": dict(sorted(counts.items())),
            }
            for judge, counts in sorted(by_judge.items())
        ],
    }
