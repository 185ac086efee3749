"""A crfm-helm plugin (loaded by helm-run --plugins, in the helm venv, never by the site): the
run spec "simple_jury", simple_classification's scenario annotated by HELM's own
LLMAsJuryAnnotator with two offline judges, simple/model1 and SECOND_MODEL (the simple client
registered again through prod_env, tests/support/helm_runs.py).

HELM's simple client answers with the prompt's last whitespace-separated token, so the judge
template ends with a verdict in JSON without spaces: each judge "returns" it and HELM's
annotator parses and validates it as it would a real judge's answer."""

from helm.benchmark.adaptation.common_adapter_specs import get_generation_adapter_spec
from helm.benchmark.annotation.annotator import AnnotatorSpec
from helm.benchmark.annotation.model_as_judge import AnnotatorModelInfo, LLMAsJuryAnnotator
from helm.benchmark.metrics.common_metric_specs import get_exact_match_metric_specs
from helm.benchmark.run_spec import RunSpec, run_spec_function
from helm.benchmark.scenarios.scenario import ScenarioSpec

JURY_SCORE = 4
TEMPLATE = (
    "Rate the answer.\nQuestion: {QUESTION}\nAnswer: {RESPONSE}\n"
    '{"accuracy":{"score":' + str(JURY_SCORE) + ',"explanation":"judged"}}'
)


class SimpleJuryAnnotator(LLMAsJuryAnnotator):
    name = "simple_jury"

    def __init__(self, auto_client):
        super().__init__(
            name="simple_jury",
            auto_client=auto_client,
            prompt_template=TEMPLATE,
            annotation_criteria={"accuracy": {"score", "explanation"}},
            annotator_models={
                "judge_one": AnnotatorModelInfo("simple/model1", "simple/model1"),
                "judge_two": AnnotatorModelInfo("simple/tutorial", "simple/tutorial"),
            },
        )


@run_spec_function("simple_jury")
def get_simple_jury_run_spec() -> RunSpec:
    return RunSpec(
        name="simple_jury",
        scenario_spec=ScenarioSpec(
            class_name="helm.benchmark.scenarios.simple_scenarios.SimpleClassificationScenario"
        ),
        adapter_spec=get_generation_adapter_spec(
            instructions="Classify the parity.", input_noun="Number", output_noun="Parity"
        ),
        metric_specs=get_exact_match_metric_specs(),
        annotators=[AnnotatorSpec(class_name="helm_jury_plugin.SimpleJuryAnnotator")],
        groups=["simple_jury"],
    )
