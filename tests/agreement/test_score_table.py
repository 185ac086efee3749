"""The one score table: every rater kind with the right labels, item attributes, coverage,
and a fixed number of queries however large the study."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

import pandas as pd
import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agreement import selectors
from annotation import services as annotation_services
from annotation.models import Assignment, Item, RubricCriterion, StudyMembership
from delphi.models import TaxonomyNode, TaxonomyVersion
from tests.support import jury_aggregate as jury_selectors
from jury.models import Judge, JudgeCall, JudgeScore, JuryRun, MetricScore, PromptTemplate
from tests.factories import make_study_with_members

CRITERIA = ("accuracy", "completeness", "clarity")
CATEGORIES = ("Clinical Decision Support", "Patient Communication and Education")
BENCHMARKS = ("MedCalc-Bench", "MEDIQA", "")


@dataclass
class Built:
    study: object
    members: object
    judges: list
    items: list
    pending: list  # assignments left unsubmitted


def quality(item_index: int) -> int:
    return item_index % 5 + 1


def clinician_value(item_index: int, rater_index: int, criterion_index: int) -> int:
    """Clinicians follow the item's quality with small, rater-specific disagreements."""
    return max(
        1, min(5, quality(item_index) + ((item_index + rater_index + criterion_index) % 3 == 0))
    )


def _taxonomy(study) -> dict[str, TaxonomyNode]:
    version = TaxonomyVersion.objects.create(name=f"Test taxonomy {study.pk}")
    cds = TaxonomyNode.objects.create(version=version, kind="category", name=CATEGORIES[0])
    sub = TaxonomyNode.objects.create(
        version=version, kind="subcategory", parent=cds, name="Supporting diagnostic decisions"
    )
    task = TaxonomyNode.objects.create(
        version=version, kind="task", parent=sub, name="Calculating risk scores"
    )
    pce = TaxonomyNode.objects.create(version=version, kind="category", name=CATEGORIES[1])
    sub2 = TaxonomyNode.objects.create(
        version=version, kind="subcategory", parent=pce, name="Patient-provider messaging"
    )
    return {"task": task, "subcategory": sub2}


def submit(assignment: Assignment, *, rater_index: int, item_index: int, cannot_assess=()) -> None:
    answers = {
        key: annotation_services.CriterionAnswer(cannot_assess=True)
        if key in cannot_assess
        else annotation_services.CriterionAnswer(value=clinician_value(item_index, rater_index, c))
        for c, key in enumerate(CRITERIA)
    }
    annotation_services.submit_assignment(
        assignment_id=assignment.pk, clinician=assignment.clinician, answers=answers
    )


def build_study(
    *, n_items: int = 8, n_clinicians: int = 3, leave_pending: int = 1, cannot_assess: bool = True
) -> Built:
    """A study with taxonomy, two models, benchmarks, clinician ratings (one item short of
    raters, one cannot-assess answer), two judges (one with a repeated run), a metric and
    judge calls with tokens, costs and failures."""
    members = make_study_with_members(n_items=n_items, n_clinicians=n_clinicians, k=2)
    study = members.study
    RubricCriterion.objects.filter(study=study, key="clarity").update(allow_cannot_assess=True)
    nodes = _taxonomy(study)
    items = list(Item.objects.filter(study=study).order_by("pk"))
    for i, item in enumerate(items):
        item.taxonomy_node = nodes["task"] if i % 4 in (0, 1) else nodes["subcategory"]
        item.benchmark = BENCHMARKS[i % 3]
        item.model_name = "model-b" if i % 2 else "model-a"
        item.save(update_fields=["taxonomy_node", "benchmark", "model_name"])
    index = {item.pk: i for i, item in enumerate(items)}
    raters = {c.pk: r for r, c in enumerate(members.clinicians)}
    assignments = list(
        Assignment.objects.filter(study=study)
        .exclude(status=Assignment.Status.WITHDRAWN)
        .select_related("clinician")
        .order_by("item_id", "clinician_id")
    )
    # one unsubmitted assignment on each of the last `leave_pending` items
    last_per_item = {a.item_id: a for a in assignments}
    pending = list(last_per_item.values())[len(last_per_item) - leave_pending :]
    first_done = False
    for a in assignments:
        if a in pending:
            continue
        ca = ("clarity",) if cannot_assess and not first_done else ()
        first_done = True
        submit(a, rater_index=raters[a.clinician_id], item_index=index[a.item_id], cannot_assess=ca)

    gpt, _ = Judge.objects.get_or_create(
        name="gpt-judge",
        defaults=dict(
            provider="openai",
            model_id="gpt",
            weight=1.0,
            params={"max_tokens": 512},
            price_input_per_mtok=Decimal("2.5"),
            price_output_per_mtok=Decimal("10"),
        ),
    )
    claude, _ = Judge.objects.get_or_create(
        name="claude-judge", defaults=dict(provider="imported", model_id="claude", weight=3.0)
    )
    criteria = {c.key: c for c in study.criteria.all()}
    template = PromptTemplate.objects.create(name=f"t{study.pk}", body="{response}")
    for run_no in (1, 2):
        run = JuryRun.objects.create(study=study, prompt_template=template)
        for i, item in enumerate(items):
            status = "provider_error" if (run_no == 2 and i == 0) else "ok"
            cached = run_no == 2 and i == 1
            call = JudgeCall.objects.create(
                run=run,
                judge=gpt,
                item=item,
                prompt_hash=f"h{i}",
                prompt_text="p",
                status=status,
                input_tokens=None if cached or status != "ok" else 1000,
                output_tokens=None if cached or status != "ok" else 200,
                cost=Decimal(0) if cached else (Decimal("0.0045") if status == "ok" else None),
                cached_from=JudgeCall.objects.filter(judge=gpt, item=item).first()
                if cached
                else None,
            )
            if status != "ok":
                continue
            for c, key in enumerate(CRITERIA):
                # run 1 is superseded by run 2 (latest per item, judge and criterion counts)
                value = 1.0 if run_no == 1 else float(min(5, quality(i) + (c == 1)))
                JudgeScore.objects.create(
                    item=item, judge=gpt, criterion=criteria[key], call=call, value=value
                )
    for i, item in enumerate(items):
        for key in CRITERIA:
            JudgeScore.objects.create(
                item=item, judge=claude, criterion=criteria[key], value=float(quality(i))
            )
        MetricScore.objects.create(
            item=item, metric="rouge_l_f1", value=0.1 * quality(i) + 0.01 * (i % 2)
        )
    # one invalid verdict: left out, counted
    bad = JuryRun.objects.create(study=study, prompt_template=template)
    bad_call = JudgeCall.objects.create(
        run=bad,
        judge=gpt,
        item=items[0],
        prompt_hash="x",
        prompt_text="p",
        status="invalid_verdict",
    )
    JudgeScore.objects.create(
        item=items[0], judge=gpt, criterion=criteria["accuracy"], call=bad_call, is_valid=False
    )
    return Built(study=study, members=members, judges=[gpt, claude], items=items, pending=pending)


@pytest.fixture
def built(db) -> Built:
    return build_study()


def test_every_kind_with_its_labels(built):
    data = selectors.score_data(study=built.study)
    table = data.table
    assert list(table.columns) == list(selectors.TABLE_COLUMNS)
    kinds = table.groupby("rater_kind")["rater"].unique().map(set).to_dict()
    pseudonyms = set(
        StudyMembership.objects.filter(study=built.study, role="clinician").values_list(
            "pseudonym", flat=True
        )
    )
    assert kinds["clinician"] == pseudonyms == {"R01", "R02", "R03"}
    assert kinds["judge"] == {"gpt-judge", "claude-judge"}
    assert kinds["jury"] == {"jury"}
    assert kinds["metric"] == {"rouge_l_f1"}
    assert set(table.loc[table["rater_kind"] == "metric", "criterion"]) == {"overall"}
    assert set(table.loc[table["rater_kind"] != "metric", "criterion"]) == set(CRITERIA)
    assert data.criteria == list(CRITERIA)
    # no duplicates, and never a name or e-mail
    assert not table.duplicated(["item", "criterion", "rater"]).any()
    User = get_user_model()
    for user in User.objects.filter(pk__in=[c.pk for c in built.members.clinicians]):
        assert user.username not in set(table["rater"])
        assert user.email not in table.to_csv()


def test_item_attributes_walk_up_to_the_category(built):
    table = selectors.score_table(study=built.study)
    attrs = table.drop_duplicates("item").set_index("item")
    for i, item in enumerate(built.items):
        row = attrs.loc[item.pk]
        assert row["category"] == (CATEGORIES[0] if i % 4 in (0, 1) else CATEGORIES[1])
        assert row["benchmark"] == (BENCHMARKS[i % 3] or selectors.NO_BENCHMARK)
        assert row["model"] == ("model-b" if i % 2 else "model-a")
    assert "coverage" in table.attrs


def test_items_without_a_node_have_no_category(built):
    Item.objects.filter(pk=built.items[0].pk).update(taxonomy_node=None)
    table = selectors.score_table(study=built.study)
    assert set(table.loc[table["item"] == built.items[0].pk, "category"]) == {selectors.NO_CATEGORY}


def test_judges_latest_score_and_the_weighted_jury(built):
    table = selectors.score_table(study=built.study)
    gpt = table.loc[table["rater"] == "gpt-judge"].set_index(["item", "criterion"])["value"]
    # item 2: run 2 (quality 3, completeness +1) replaces run 1's 1.0
    assert gpt[(built.items[2].pk, "accuracy")] == 3.0
    assert gpt[(built.items[2].pk, "completeness")] == 4.0
    # item 0: run 2 failed, so run 1's valid score is its latest; the invalid one is left out
    assert gpt[(built.items[0].pk, "accuracy")] == 1.0
    jury = table.loc[table["rater"] == "jury"].set_index(["item", "criterion"])["value"]
    expected = {
        (s.item_id, s.criterion): s.value
        for s in jury_selectors.jury_item_scores(study=built.study)
    }
    assert set(jury.index) == set(expected)
    for key, value in expected.items():
        assert jury[key] == pytest.approx(value, abs=1e-12)
    # weights 1 and 3: item 2 accuracy = (3 + 3*3) / 4
    assert jury[(built.items[2].pk, "accuracy")] == pytest.approx(3.0)
    assert jury[(built.items[0].pk, "accuracy")] == pytest.approx((1.0 + 3 * 1) / 4)


def test_coverage_lists_what_is_left_out(built):
    data = selectors.score_data(study=built.study)
    cov = data.coverage
    assert cov["n_items"] == len(built.items)
    # the pending assignment leaves its item with one clinician rating
    short = {r["item"]: r["n_clinicians"] for r in cov["items_short"]}
    assert short == {built.pending[0].item_id: 1}
    assert cov["cannot_assess"]["total"] == 1
    assert cov["cannot_assess"]["by_criterion"] == {"clarity": 1}
    assert cov["invalid_judge_scores"] == {"gpt-judge": 1}
    calls = {j["judge"]: j for j in cov["judge_calls"]}
    assert calls["gpt-judge"]["by_status"] == {"invalid_verdict": 1, "ok": 15, "provider_error": 1}
    assert calls["gpt-judge"]["failed"] == 2
    table = data.table
    clin = table.loc[table["rater_kind"] == "clinician"]
    # the cannot-assess answer is not a row: one rater-item has 2 criteria
    assert (clin.groupby(["item", "rater"]).size() == 2).sum() == 1
    assert len(data.calls) == 17 and data.calls["cached"].sum() == 1


def test_raters_with_too_few_items_are_listed(db):
    b = build_study(n_items=4, n_clinicians=3, leave_pending=0, cannot_assess=False)
    # a fourth clinician who rated only one item
    from tests.factories import UserFactory

    late = UserFactory()
    annotation_services.add_member(
        study=b.study, user=late, role="clinician", actor=b.members.coordinator
    )
    item = b.items[0]
    a = Assignment.objects.create(study=b.study, item=item, clinician=late, position=99)
    submit(a, rater_index=3, item_index=0)
    cov = selectors.score_data(study=b.study).coverage
    assert {"rater": "R04", "rater_kind": "clinician", "n_items": 1} in cov["raters_few_items"]


def test_first_values_after_a_revision(built):
    a = Assignment.objects.filter(study=built.study, status="submitted").order_by("pk").last()
    answers = {k: annotation_services.CriterionAnswer(value=5) for k in CRITERIA}
    before = selectors.score_table(study=built.study)
    annotation_services.submit_assignment(
        assignment_id=a.pk, clinician=a.clinician, answers=answers
    )
    latest = selectors.score_table(study=built.study, values="latest")
    first = selectors.score_table(study=built.study, values="first")
    rater = StudyMembership.objects.get(
        study=built.study, user=a.clinician, role="clinician"
    ).pseudonym
    sel = (latest["item"] == a.item_id) & (latest["rater"] == rater)
    assert set(latest.loc[sel, "value"]) == {5.0}
    pd.testing.assert_frame_equal(first, before)
    with pytest.raises(ValueError):
        selectors.score_data(study=built.study, values="newest")


def _count_queries(study) -> int:
    with CaptureQueriesContext(connection) as ctx:
        selectors.score_data(study=study)
    return len(ctx.captured_queries)


def test_query_count_does_not_grow_with_the_study(db):
    small = build_study(n_items=4, n_clinicians=2)
    large = build_study(n_items=20, n_clinicians=5)
    Judge.objects.create(name="third", provider="imported", model_id="x")
    for item in large.items:
        for c in large.study.criteria.all():
            JudgeScore.objects.create(
                item=item, judge=Judge.objects.get(name="third"), criterion=c, value=2.0
            )
        MetricScore.objects.create(item=item, metric="bertscore_f1", value=0.5)
    n_small, n_large = _count_queries(small.study), _count_queries(large.study)
    assert n_small == n_large == 8


def test_an_empty_study_gives_an_empty_table(db):
    members = make_study_with_members(n_items=3, n_clinicians=2)
    data = selectors.score_data(study=members.study)
    assert data.table.empty and list(data.table.columns) == list(selectors.TABLE_COLUMNS)
    assert data.coverage["n_items_short"] == 3
