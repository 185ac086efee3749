"""Test data for the agreement app: a rated study with every kind of rater."""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal

from annotation import services as annotation_services
from annotation.demo import DEMO_STUDY_NAME, MODEL_QUALITY_MEAN, load_demo
from annotation.demo_cases import DEMO_MODELS
from annotation.models import Assignment, Item, RatingStudy, RubricCriterion
from delphi.models import TaxonomyNode, TaxonomyVersion
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


def two_category_taxonomy(study) -> dict[str, TaxonomyNode]:
    """A task two levels under CATEGORIES[0] and a subcategory under CATEGORIES[1]."""
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


def _place_items(study) -> list[Item]:
    """Items under two categories, three benchmarks (one blank) and two models."""
    RubricCriterion.objects.filter(study=study, key="clarity").update(allow_cannot_assess=True)
    nodes = two_category_taxonomy(study)
    items = list(Item.objects.filter(study=study).order_by("pk"))
    for i, item in enumerate(items):
        item.taxonomy_node = nodes["task"] if i % 4 in (0, 1) else nodes["subcategory"]
        item.benchmark = BENCHMARKS[i % 3]
        item.model_name = "model-b" if i % 2 else "model-a"
        item.save(update_fields=["taxonomy_node", "benchmark", "model_name"])
    return items


def _rate(members, items: list[Item], *, leave_pending: int, cannot_assess: bool) -> list:
    """Submit every assignment but one on each of the last `leave_pending` items (returned);
    the first submitted answers "cannot assess" on clarity when `cannot_assess`."""
    study = members.study
    index = {item.pk: i for i, item in enumerate(items)}
    raters = {c.pk: r for r, c in enumerate(members.clinicians)}
    assignments = list(
        Assignment.objects.filter(study=study)
        .exclude(status=Assignment.Status.WITHDRAWN)
        .select_related("clinician")
        .order_by("item_id", "clinician_id")
    )
    last_per_item = {a.item_id: a for a in assignments}
    pending = list(last_per_item.values())[len(last_per_item) - leave_pending :]
    first_done = False
    for a in assignments:
        if a in pending:
            continue
        ca = ("clarity",) if cannot_assess and not first_done else ()
        first_done = True
        submit(a, rater_index=raters[a.clinician_id], item_index=index[a.item_id], cannot_assess=ca)
    return pending


def _judges() -> tuple[Judge, Judge]:
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
    return gpt, claude


def _gpt_call(run: JuryRun, gpt: Judge, item: Item, *, i: int, run_no: int) -> JudgeCall:
    """Run 2 fails on item 0 and is a cache hit on item 1; every other call is billed."""
    status = "provider_error" if (run_no == 2 and i == 0) else "ok"
    cached = run_no == 2 and i == 1
    return JudgeCall.objects.create(
        run=run,
        judge=gpt,
        item=item,
        prompt_hash=f"h{i}",
        prompt_text="p",
        status=status,
        input_tokens=None if cached or status != "ok" else 1000,
        output_tokens=None if cached or status != "ok" else 200,
        cost=Decimal(0) if cached else (Decimal("0.0045") if status == "ok" else None),
        cached_from=JudgeCall.objects.filter(judge=gpt, item=item).first() if cached else None,
    )


def _gpt_runs(study, gpt: Judge, items: list[Item], template: PromptTemplate) -> None:
    """Two runs of the gpt judge: run 2 supersedes run 1's scores (1.0 everywhere)."""
    criteria = {c.key: c for c in study.criteria.all()}
    for run_no in (1, 2):
        run = JuryRun.objects.create(study=study, prompt_template=template)
        for i, item in enumerate(items):
            call = _gpt_call(run, gpt, item, i=i, run_no=run_no)
            if call.status != "ok":
                continue
            for c, key in enumerate(CRITERIA):
                value = 1.0 if run_no == 1 else float(min(5, quality(i) + (c == 1)))
                JudgeScore.objects.create(
                    item=item, judge=gpt, criterion=criteria[key], call=call, value=value
                )


def _imported_scores(study, claude: Judge, items: list[Item]) -> None:
    """Imported claude scores (no call) and a ROUGE-L value per item."""
    criteria = {c.key: c for c in study.criteria.all()}
    for i, item in enumerate(items):
        for key in CRITERIA:
            JudgeScore.objects.create(
                item=item, judge=claude, criterion=criteria[key], value=float(quality(i))
            )
        MetricScore.objects.create(
            item=item, metric="rouge_l_f1", value=0.1 * quality(i) + 0.01 * (i % 2)
        )


def _invalid_verdict(study, gpt: Judge, item: Item, template: PromptTemplate) -> None:
    """One invalid verdict: left out of the table, counted in the coverage."""
    run = JuryRun.objects.create(study=study, prompt_template=template)
    call = JudgeCall.objects.create(
        run=run, judge=gpt, item=item, prompt_hash="x", prompt_text="p", status="invalid_verdict"
    )
    accuracy = study.criteria.get(key="accuracy")
    JudgeScore.objects.create(item=item, judge=gpt, criterion=accuracy, call=call, is_valid=False)


def build_study(
    *, n_items: int = 8, n_clinicians: int = 3, leave_pending: int = 1, cannot_assess: bool = True
) -> Built:
    """A study with taxonomy, two models, benchmarks, clinician ratings (one item short of
    raters, one cannot-assess answer), two judges (one with a repeated run), a metric and
    judge calls with tokens, costs and failures."""
    members = make_study_with_members(n_items=n_items, n_clinicians=n_clinicians, k=2)
    study = members.study
    items = _place_items(study)
    pending = _rate(members, items, leave_pending=leave_pending, cannot_assess=cannot_assess)
    gpt, claude = _judges()
    template = PromptTemplate.objects.create(name=f"t{study.pk}", body="{response}")
    _gpt_runs(study, gpt, items, template)
    _imported_scores(study, claude, items)
    _invalid_verdict(study, gpt, items[0], template)
    return Built(study=study, members=members, judges=[gpt, claude], items=items, pending=pending)


def demo_study_with_jury() -> RatingStudy:
    """The demo study (`manage.py rundemo` seeds the same), with an imported judge in place
    of the demo's local model (which needs a worker): its score follows the model's quality
    and the case, so the jury has something to agree with. The clinician ratings are the
    demo's own: they give the clinician-pair ICC of -20.7 of issue 14."""
    load_demo()
    study = RatingStudy.objects.get(name=DEMO_STUDY_NAME)
    judge = Judge.objects.create(name="demo-imported-judge", provider="imported", model_id="x")
    quality = {model: MODEL_QUALITY_MEAN[q] for q, model in DEMO_MODELS.items()}
    criteria = list(study.criteria.all())
    JudgeScore.objects.bulk_create(
        JudgeScore(
            item=item,
            judge=judge,
            criterion=criterion,
            value=quality[item.model_name] + 0.2 * (item.metadata["case"] % 5 - 2) + 0.1 * c,
        )
        for item in study.items.all()
        for c, criterion in enumerate(criteria)
    )
    return study
