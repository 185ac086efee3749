"""The one score table: every rater kind with the right labels, item attributes, coverage,
and a fixed number of queries however large the study."""

from __future__ import annotations

from collections import defaultdict

import pandas as pd
import pytest
from django.contrib.auth import get_user_model
from django.db import connection
from django.test.utils import CaptureQueriesContext

from agreement import item_frame, selectors
from agreement.errors import AgreementError
from annotation import services as annotation_services
from annotation.models import Assignment, Item, StudyMembership
from jury.models import Judge, JudgeScore, MetricScore
from tests.agreement.factories import (
    BENCHMARKS,
    CATEGORIES,
    CRITERIA,
    Built,
    build_study,
    submit,
)
from tests.factories import make_study_with_members


def expected_jury(study) -> dict[tuple[int, str], float]:
    """The jury rule written out as the test's oracle: per item and criterion, the
    weight-averaged latest valid score of every judge."""
    latest: dict[tuple[int, str, int], tuple[float, float]] = {}
    for s in (
        JudgeScore.objects.filter(item__study=study, is_valid=True)
        .select_related("judge", "criterion")
        .order_by("pk")
    ):
        latest[(s.item_id, s.criterion.key, s.judge_id)] = (s.value, s.judge.weight)
    sums: dict[tuple[int, str], list[float]] = defaultdict(lambda: [0.0, 0.0])
    for (item, key, _judge), (value, weight) in latest.items():
        sums[(item, key)][0] += weight * value
        sums[(item, key)][1] += weight
    return {key: total / weights for key, (total, weights) in sums.items()}


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
        assert row["benchmark"] == (BENCHMARKS[i % 3] or item_frame.NO_BENCHMARK)
        assert row["model"] == ("model-b" if i % 2 else "model-a")
    assert "coverage" in table.attrs


def test_items_without_a_node_have_no_category(built):
    Item.objects.filter(pk=built.items[0].pk).update(taxonomy_node=None)
    table = selectors.score_table(study=built.study)
    assert set(table.loc[table["item"] == built.items[0].pk, "category"]) == {
        item_frame.NO_CATEGORY
    }


def test_judges_latest_score_and_the_weighted_jury(built):
    table = selectors.score_table(study=built.study)
    gpt = table.loc[table["rater"] == "gpt-judge"].set_index(["item", "criterion"])["value"]
    # item 2: run 2 (quality 3, completeness +1) replaces run 1's 1.0
    assert gpt[(built.items[2].pk, "accuracy")] == 3.0
    assert gpt[(built.items[2].pk, "completeness")] == 4.0
    # item 0: run 2 failed, so run 1's valid score is its latest; the invalid one is left out
    assert gpt[(built.items[0].pk, "accuracy")] == 1.0
    jury = table.loc[table["rater"] == "jury"].set_index(["item", "criterion"])["value"]
    expected = expected_jury(built.study)
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
    with pytest.raises(AgreementError) as exc:
        selectors.score_data(study=built.study, values="newest")
    assert exc.value.field == "values"


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
    lines = "".join(
        f"{item.external_id},{item.model_name},ext-{i % 3},accuracy,{i % 5 + 1}\n"
        for i, item in enumerate(large.items)
    )
    annotation_services.import_ratings(
        study=large.study,
        data=f"external_id,model,rater,criterion,value\n{lines}".encode(),
        name="ratings.csv",
        actor=None,
    )
    n_small, n_large = _count_queries(small.study), _count_queries(large.study)
    assert n_small == n_large == 9


def test_an_empty_study_gives_an_empty_table(db):
    members = make_study_with_members(n_items=3, n_clinicians=2)
    data = selectors.score_data(study=members.study)
    assert data.table.empty and list(data.table.columns) == list(selectors.TABLE_COLUMNS)
    assert data.coverage["n_items_short"] == 3
