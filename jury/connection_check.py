"""Test a judge's connection: does its server serve the model, which structured-output mode
works, how long a verdict takes, and does the reply parse as one.

The admin action and `manage.py test_judge` call `check_judge_connection`. For an
OpenAI-compatible judge it lists GET {endpoint}/models and refuses a model id the server does
not serve (a wrong name is otherwise answered by whatever model is loaded), then sends one
probe verdict per structured-output mode, in the order of jury.providers.structured, and
picks the first mode whose reply parses as a verdict (saved when asked, with an audit row).
An Anthropic judge: its key variable is set, one probe per mode (an unknown model is the
API's own 404). A local judge: its model file is present; its grammar is its only mode. Only
the judge's own endpoint and key are used (jury.providers.policy holds: a judge the rules
refuse sends nothing).
"""

from __future__ import annotations

import dataclasses
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction

from annotation import audit
from jury.models import Judge
from jury.prompts import DEFAULT_BODY, DEFAULT_SYSTEM, render_prompt
from jury.providers import CriterionSpec, JudgeRequest, ProviderError, client_for, structured
from jury.providers.base import BadRequest, ConnectionFailed
from jury.providers.local_models import LocalModelMissing, smollm2_gguf_path
from jury.providers.openai_compat import OpenAICompatClient
from jury.verdicts import parse_verdict

AUDIT_ACTION = "jury.judge_structured_output"
# How long the model listing may take (the probes use the judge's own timeout).
LIST_TIMEOUT_SECONDS = 15.0

PROBE_CRITERION = CriterionSpec(
    key="accuracy",
    label="Accuracy",
    definition="Is the response medically correct?",
    scale_min=1,
    scale_max=5,
    anchors={"1": "Wrong", "5": "Fully correct"},
)
# A mode that holds the reply to a schema is probed with a schema whose key the prompt does
# not name: a verdict under that key shows the server held the reply to the schema, while a
# server that ignores the mode's field answers the prompt's key (and a model that follows
# the prompt would otherwise make an ignored mode look as if it worked).
SCHEMA_CRITERION = CriterionSpec(
    key="rating",
    label=PROBE_CRITERION.label,
    definition=PROBE_CRITERION.definition,
    scale_min=PROBE_CRITERION.scale_min,
    scale_max=PROBE_CRITERION.scale_max,
    anchors=PROBE_CRITERION.anchors,
)
PROBE_QUESTION = "What is the normal resting heart rate of an adult, in beats per minute?"
PROBE_RESPONSE = "Between 60 and 100 beats per minute."


@dataclass(frozen=True)
class ModeResult:
    """One probe: `accepted` when the server answered 2xx, `shaped` when the reply has the
    verdict's shape (the mode works: a score off the scale is the model's doing), `parsed`
    when it is a valid verdict; `detail` is the error or the parse problem."""

    mode: str
    accepted: bool
    shaped: bool  # the reply has the verdict's shape (its scores may be off the scale)
    parsed: bool  # the reply is a valid verdict
    latency_ms: int
    detail: str = ""
    output_tokens: int | None = None


@dataclass
class ConnectionReport:
    """What the test found. `problem` ends the test (nothing more could be checked);
    `chosen` is the first working mode; `saved` whether it was stored on the judge."""

    judge: str
    provider: str
    notes: list[str] = field(default_factory=list)
    served_models: list[str] | None = None
    results: list[ModeResult] = field(default_factory=list)
    chosen: str | None = None
    saved: bool = False
    problem: str | None = None

    @property
    def failure(self) -> str | None:
        """Why the test failed (None: it passed)."""
        if self.problem is None and self.results and self.chosen is None:
            return "no structured-output mode gave a verdict."
        return self.problem

    def lines(self) -> list[str]:
        """The report as text lines (the command prints them, the admin shows them)."""
        out = [f"Judge {self.judge!r} ({self.provider}):", *self.notes]
        for r in self.results:
            if r.parsed:
                state = "works (verdict parsed)"
            elif r.shaped:
                state = "works (verdict shape, but not a valid verdict)"
            else:
                state = "answered, not a verdict" if r.accepted else "refused"
            tokens = f", {r.output_tokens} output tokens" if r.output_tokens is not None else ""
            detail = f": {r.detail}" if r.detail else ""
            out.append(f"  mode {r.mode!r}: {state} in {r.latency_ms / 1000:.2f} s{tokens}{detail}")
        if self.failure:
            out.append(f"FAILED: {self.failure}")
        elif self.chosen is not None:
            saved = "saved on the judge" if self.saved else "not saved (--save saves it)"
            out.append(f"Chosen mode: {self.chosen!r}, {saved}.")
        return out


def probe_request(judge: Judge, *, mode: str) -> JudgeRequest:
    """One short verdict request with the default prompt and the judge's own sampling; for
    a mode held to a schema, the schema's key is not the prompt's (SCHEMA_CRITERION)."""
    prompt = render_prompt(
        body=DEFAULT_BODY,
        question=PROBE_QUESTION,
        response=PROBE_RESPONSE,
        gold_response=PROBE_RESPONSE,
        criteria=[PROBE_CRITERION],
    )
    return JudgeRequest(
        system=DEFAULT_SYSTEM,
        prompt=prompt,
        criteria=(SCHEMA_CRITERION if mode in structured.SCHEMA_MODES else PROBE_CRITERION,),
        temperature=float(judge.params.get("temperature", 0.0)),
        max_tokens=int(judge.params.get("max_tokens", 1024)),
        timeout_seconds=judge.timeout_seconds,
    )


def check_judge_connection(
    *, judge: Judge, save: bool = False, actor: AbstractBaseUser | None = None
) -> ConnectionReport:
    """Test the judge's connection (see the module docstring); with `save`, store the first
    working mode on the judge."""
    report = ConnectionReport(judge=judge.name, provider=judge.provider)
    problems = judge.policy_problems()
    if problems:
        report.problem = "nothing sent, the operator's rules refuse this judge: " + " ".join(
            problems.values()
        )
        return report
    if judge.provider == Judge.Provider.IMPORTED:
        report.notes.append("Imported verdicts: there is no connection to test.")
        return report
    if judge.provider == Judge.Provider.LOCAL:
        _check_local(judge, report)
        return report
    api_key = _api_key(judge, report)
    if report.problem:
        return report
    if judge.provider == Judge.Provider.OPENAI:
        _check_model_served(judge, api_key, report)
        if report.problem:
            return report
    else:
        report.notes.append(
            "Model id: checked by the probes (Anthropic answers 404 for a model it lacks)."
        )
    _probe_modes(judge, api_key, report)
    if save and report.chosen is not None:
        report.saved = _save_mode(judge, report.chosen, actor=actor)
    return report


def _api_key(judge: Judge, report: ConnectionReport) -> str | None:
    if not judge.api_key_env:
        report.notes.append("Key: none (the requests carry no key).")
        return None
    value = os.environ.get(judge.api_key_env)
    if value:
        report.notes.append(
            f"Key: {judge.api_key_env} is set in this process (the workers need it too)."
        )
        return value
    hosted = not judge.endpoint
    message = f"Key: {judge.api_key_env} is not set in this process"
    if hosted:
        report.problem = f"{message}; the provider's own API needs it."
    else:
        report.notes.append(f"{message}; the requests carry no key.")
    return None


def _check_local(judge: Judge, report: ConnectionReport) -> None:
    try:
        path = Path(judge.params.get("model_path") or smollm2_gguf_path())
    except LocalModelMissing as exc:
        report.problem = str(exc)
        return
    if not path.is_file():
        report.problem = f"the local model file {path} is missing."
        return
    report.notes.append(
        f"Local model file: {path} is present. The local judge's output is always held to "
        "the verdict by its grammar: no structured-output mode to choose, no request sent."
    )


def _check_model_served(judge: Judge, api_key: str | None, report: ConnectionReport) -> None:
    """List the server's models; a model id it does not serve ends the test."""
    if judge.params.get("api_version"):
        report.notes.append("Model id: an Azure OpenAI deployment name, not checked.")
        return
    client = client_for(
        provider=judge.provider,
        model_id=judge.model_id,
        endpoint=judge.endpoint,
        api_key=api_key,
        params=judge.params,
    )
    assert isinstance(client, OpenAICompatClient)
    try:
        served = client.served_models(timeout_seconds=LIST_TIMEOUT_SECONDS)
    except BadRequest as exc:  # e.g. 404: a server without the route
        report.notes.append(f"Models: the server lists none ({exc}); model id not checked.")
        return
    except ProviderError as exc:
        report.problem = f"the server could not be reached or failed: {exc}"
        return
    report.served_models = served
    report.notes.append(f"Models served: {', '.join(served) or 'none'}.")
    if judge.model_id not in served:
        report.problem = (
            f"the server does not serve the model {judge.model_id!r}; it serves: "
            f"{', '.join(served) or 'nothing'}. Another name would be answered by whatever "
            "model is loaded: set the judge's model id to one of these."
        )
    else:
        report.notes.append(f"Model id {judge.model_id!r}: served.")


def _probe_modes(judge: Judge, api_key: str | None, report: ConnectionReport) -> None:
    """One probe per mode; stops early when the server cannot be reached or refuses the key
    (every other mode would meet the same answer)."""
    for mode in structured.modes_for(judge.provider):
        request = probe_request(judge, mode=mode)
        client = client_for(
            provider=judge.provider,
            model_id=judge.model_id,
            endpoint=judge.endpoint,
            api_key=api_key,
            params=judge.params,
            structured_output=mode,
        )
        started = time.monotonic()
        try:
            reply = client.complete(request)
        except ProviderError as exc:
            elapsed = int((time.monotonic() - started) * 1000)
            report.results.append(ModeResult(mode, False, False, False, elapsed, str(exc)))
            if isinstance(exc, ConnectionFailed) or exc.status_code in (401, 403, 404):
                report.problem = f"the probe failed in a way no mode changes: {exc}"
                return
            continue
        elapsed = int((time.monotonic() - started) * 1000)
        verdict = parse_verdict(reply.text, request.criteria)
        shaped = parse_verdict(reply.text, [any_score(c) for c in request.criteria]).ok
        detail = "" if verdict.ok else verdict.reason
        if not shaped and parse_verdict(reply.text, [any_score(PROBE_CRITERION)]).ok:
            detail = "the server ignored the mode: the reply follows the prompt, not the schema"
        report.results.append(
            ModeResult(mode, True, shaped, verdict.ok, elapsed, detail, reply.output_tokens)
        )
        if shaped and report.chosen is None:
            report.chosen = mode


def any_score(criterion: CriterionSpec) -> CriterionSpec:
    """The criterion with any integer score valid: a verdict of its shape parses."""
    return dataclasses.replace(criterion, scale_min=-(10**9), scale_max=10**9)


@transaction.atomic
def _save_mode(judge: Judge, mode: str, *, actor: AbstractBaseUser | None) -> bool:
    """Store `mode` on the judge with an audit row (none when the judge already uses it);
    True: the judge now uses the mode."""
    judge = Judge.objects.select_for_update().get(pk=judge.pk)
    before = judge.structured_output
    if structured.effective_mode(judge.provider, before) == mode:
        return True
    judge.structured_output = mode
    judge.save(update_fields=["structured_output"])
    audit.record(
        actor=actor,
        action=AUDIT_ACTION,
        target=judge,
        before={"structured_output": before},
        after={"structured_output": mode},
    )
    return True
