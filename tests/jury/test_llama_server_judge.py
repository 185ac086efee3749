"""A judge against llama-cpp-python's own OpenAI-compatible server (`llama_cpp.server` with the
packaged SmolLM2, python -m jury.providers.llama_server), one server for the module: the
default json_schema mode is refused with a 500 and not retried, llama.cpp's mode gives
parsed verdicts on both execution paths, and test connection picks that mode and refuses a
model id the server does not serve."""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command

from jury import execution, services
from jury.connection_check import check_judge_connection
from jury.judge_definitions import judge_from_definition
from jury.models import Judge, JudgeCall
from jury.providers import local_models
from tests.factories import make_study_with_members
from tests.support.llama_server import MODEL_ALIAS, LlamaServer, running_llama_server
from tests.support.unavailable import unavailable

pytestmark = [pytest.mark.local_model, pytest.mark.slow]


def require_llama_server() -> None:
    problems = []
    if importlib.util.find_spec("llama_cpp") is None:
        problems.append("llama_cpp is not installed")
    elif importlib.util.find_spec("uvicorn") is None or importlib.util.find_spec("fastapi") is None:
        problems.append("llama-cpp-python's server extra is not installed")
    try:
        local_models.smollm2_gguf_path()
    except local_models.LocalModelMissing as exc:
        problems.append(str(exc))
    if not problems:
        return
    message = "llama_cpp.server unavailable: " + "; ".join(problems)
    unavailable(message, in_ci_then=" (CI must install it)")


@pytest.fixture(scope="module")
def llama(tmp_path_factory) -> Iterator[LlamaServer]:
    """One server for the module: loading and prompting it takes CPU time."""
    require_llama_server()
    log = tmp_path_factory.mktemp("llama") / "llama.log"
    with running_llama_server(log) as server:
        yield server


@pytest.fixture
def study(db):
    return make_study_with_members(n_items=2, n_clinicians=2, k=2).study


def llama_judge(server: LlamaServer, **kw) -> Judge:
    defaults = {
        "name": "smollm2-server",
        "provider": "openai",
        "model_id": MODEL_ALIAS,
        "endpoint": server.base_url,
        "api_key_env": "",
        "params": {"temperature": 0, "max_tokens": 400, "max_attempts": 4},
        "timeout_seconds": 300,
    }
    defaults.update(kw)
    judge = Judge(**defaults)
    judge.full_clean()  # the policy allows a loopback server by default
    judge.save()
    return judge


def run_on(study, judge: Judge, item_index: int = 0):
    item = study.items.order_by("pk")[item_index]
    return services.start_run(
        study=study, judges=[judge], actor=None, filters={"item_ids": [item.pk]}, dispatch=False
    )


def test_json_schema_is_refused_with_a_500_that_is_not_retried(llama, study):
    run = run_on(study, llama_judge(llama))  # the default mode: json_schema
    status = execution.execute_call(call_id=run.calls.get().pk, sleep=lambda s: None)
    call = run.calls.get()
    assert status == JudgeCall.Status.PROVIDER_ERROR
    assert call.attempts == 1
    assert "HTTP 500" in call.error and "response_format" in call.error
    assert "structured-output mode 'json_schema'" in call.error
    assert "test connection" in call.error


def test_llama_cpps_mode_gives_a_parsed_verdict_on_the_per_call_path(llama, study):
    run = run_on(study, llama_judge(llama, structured_output="json_object_schema"))
    status = execution.execute_call(call_id=run.calls.get().pk)
    call = run.calls.get()
    assert status == JudgeCall.Status.OK, call.error or call.raw_output
    assert call.scores.filter(is_valid=True).count() == study.criteria.count()
    assert call.output_tokens and call.output_tokens > 0


def test_llama_cpps_mode_gives_a_parsed_verdict_on_the_chunk_engine(llama, study, redis_limits):
    run = run_on(study, llama_judge(llama, structured_output="json_object_schema"), 1)
    counts = execution.execute_calls(call_ids=[run.calls.get().pk])
    call = run.calls.get()
    assert counts == {"pending": 0, "ok": 1}, call.error or call.raw_output
    assert call.scores.filter(is_valid=True).count() == study.criteria.count()


def test_test_connection_picks_llama_cpps_mode_and_saves_it(llama, db):
    judge = llama_judge(llama)
    report = check_judge_connection(judge=judge, save=True)
    assert report.failure is None, report.lines()
    assert report.served_models == [MODEL_ALIAS]
    assert report.results[0].mode == "json_schema" and not report.results[0].accepted
    assert report.chosen == "json_object_schema"
    judge.refresh_from_db()
    assert judge.structured_output == "json_object_schema"


def test_test_connection_refuses_a_model_id_the_server_does_not_serve(llama, db):
    llama_judge(llama, model_id="gpt-4o")  # the server would answer it with SmolLM2
    with pytest.raises(CommandError, match=f"it serves: {MODEL_ALIAS}"):
        call_command("test_judge", "smollm2-server", "--save")


def test_the_documented_llama_cpp_example_works_against_the_server(llama, study):
    """fixtures/judges/llama-cpp-smollm2.json as docs/judges.md gives it (only the port is
    the test server's): test connection keeps its mode, and a run scores."""
    path = Path(settings.BASE_DIR) / "fixtures" / "judges" / "llama-cpp-smollm2.json"
    data = json.loads(path.read_text())
    assert data["endpoint"] == "http://127.0.0.1:8080/v1"
    judge = judge_from_definition({**data, "endpoint": llama.base_url}, source=path.name)
    judge.save()
    report = check_judge_connection(judge=judge, save=False)
    assert report.failure is None, report.lines()
    assert report.chosen == data["structured_output"]
    run = run_on(study, judge)
    status = execution.execute_call(call_id=run.calls.get().pk)
    assert status == JudgeCall.Status.OK, run.calls.get().error or run.calls.get().raw_output
